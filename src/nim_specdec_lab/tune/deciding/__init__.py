"""What tune concludes: the fit, the decision on intervals, the out-of-sample check, the answer.

Its modules (tests/contract/test_lab_maps.py keeps this map true):

fitting.py              the cost model fitted on measured runs, and its prediction at a held-out concurrency
decide.py               the recommendation, decided on paired intervals against off (Decision)
verification.py         the choice's prediction judged at concurrencies its fit did not see
answer.py               the answer in one line: the expected speed-up on this traffic with its 95% interval
recorded_runs.py        the decision again from recorded runs, without serving (pure)
from_recorded.py        `tune --decide` and `tune --export-runs`: recorded runs read and written (the shell)
"""
