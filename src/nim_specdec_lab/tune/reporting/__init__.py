"""What tune writes: tune.json, tune.md, the plots and the alert rules.

Its modules (tests/contract/test_lab_maps.py keeps this map true):

report.py               tune.json from plain data: every configuration, its figures, the decision
report_md.py            tune.md from tune.json's content
engine_report.py        the top of tune.md: what each server ran on and what will serve
plots.py                PNG plots of tokens/s and speed-up against concurrency
expected_acceptance.py  tune.json's `expected_acceptance`: what live acceptance should be
alert_rules.py          Prometheus alerts for one served model from tune.json (pure)
"""
