"""`nim-specdec tune`: measure speculation on this hardware, fit a cost model, choose a K per batch size.

The entry point is session.tune. The sub-packages, lowest first (each imports only those above it in this list,
and none imports the modules directly in tune/; tests/contract/test_import_contract.py checks it), each with a map
of its own modules in its __init__; tests/contract/test_lab_maps.py keeps every map true:

runs/                   the measured runs: how a run is measured, its repeats, the rounds and the table of all of them
model/                  the cost model: what a K gains and costs at each batch size, and the K and method it chooses
lineup/                 what is served: the candidates, those left unserved, dropped, or served again
deciding/               what tune concludes: the fit, the decision on intervals, the out-of-sample check, the answer
engines/                the engine measured on and the engine that will serve, and how they differ
reporting/              what tune writes: tune.json, tune.md, the plots and the alert rules
studies/                how tune's decision behaves over simulated worlds (pure; bench/ prints them)
servers.py              the shell: servers started through `nim-specdec serve`, replayed, measured, stopped
session.py              one tune session: named stages over one immutable state, from the trace to tune.json
session_state.py        the values passed from stage to stage: the options, the setup, the immutable TuneState
session_result.py       what the measurements make: the decision, the tables' rows, the answer, the files
"""
