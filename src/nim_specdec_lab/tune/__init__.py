"""`nim-specdec tune`: measure speculation on this hardware, fit a cost model, choose a K per batch size.

The entry point is session.tune. The sub-packages, lowest first (each imports only those above it in this list,
and none imports the modules directly in tune/; tests/contract/test_import_contract.py checks it, and
tests/contract/test_lab_maps.py keeps this map true):

runs/                   the measured runs: how a run is measured, its repeats, the rounds and the table of all of them
  measurement.py        the options every server is measured with, a run (Round), its request count, its judged figure
  repeats.py            repeated runs of one configuration: the one that stands for them and their spread
  rounds.py             the rounds: which servers start in what order (order_of), and every run they measured (Table)
model/                  the cost model: what a K gains and costs at each batch size, and the K and method it chooses
  acceptance.py         tokens a request gains per engine step at each K: one method's acceptance curve
  cost_model.py         one engine step's cost on this hardware, fitted on closed-loop measurements
  choice.py             the best K per batch size for each method, then the method, or speculation off
lineup/                 what is served: the candidates, those left unserved, dropped, or served again
  candidates.py         candidate speculative configs, each server's environment, the recommended variables
  simulated.py          the model-free methods' acceptance curves from recorded token ids, through the simulators
  pruning.py            the rules that leave a candidate unserved or drop it, and the server budget
  confirming.py         the rounds after the first: off and the contenders, within the budget, dropped on intervals
deciding/               what tune concludes: the fit, the decision on intervals, the out-of-sample check, the answer
  fitting.py            the cost model fitted on measured runs, and its prediction at a held-out concurrency
  decide.py             the recommendation, decided on paired intervals against off (Decision)
  verification.py       the choice's prediction judged at concurrencies its fit did not see
  answer.py             the answer in one line: the expected speed-up on this traffic with its 95% interval
  recorded_runs.py      the decision again from recorded runs, without serving (pure)
  from_recorded.py      `tune --decide` and `tune --export-runs`: recorded runs read and written (the shell)
engines/                the engine measured on and the engine that will serve, and how they differ
  device.py             the device the servers ran on: GPUs through NVML, else the CPU model
  engine.py             the measured and the serving engine as plain data (runner, graph mode, async scheduling)
  engine_log.py         what a vLLM server's log says about its engine
  serving.py            the recommendation against the serving engine: a dropped schedule falls back to a static K
  measured.py           the edges of the engine records: a server's log, its plan and device; the serving target
reporting/              what tune writes: tune.json, tune.md, the plots and the alert rules
  report.py             tune.json from plain data: every configuration, its figures, the decision
  report_md.py          tune.md from tune.json's content
  engine_report.py      the top of tune.md: what each server ran on and what will serve
  plots.py              PNG plots of tokens/s and speed-up against concurrency
  expected_acceptance.py  tune.json's `expected_acceptance`: what live acceptance should be
  alert_rules.py        Prometheus alerts for one served model from tune.json (pure)
studies/                how tune's decision behaves over simulated worlds (pure; bench/ prints them)
  noise_study.py        how often the decision recommends what, over simulated noisy worlds
  pruning_study.py      whether pruning changes the answer against the full sweep
  selection_study.py    how often the recommendation's interval covers its true speed-up
servers.py              the shell: servers started through `nim-specdec serve`, replayed, measured, stopped
session.py              one tune session: named stages over one immutable state, from the trace to tune.json
session_state.py        the values passed from stage to stage: the options, the setup, the immutable TuneState
session_result.py       what the measurements make: the decision, the tables' rows, the answer, the files
"""
