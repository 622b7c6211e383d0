"""On/off benchmark of speculative decoding over a captured trace or SPEED-Bench categories, driven by AIPerf.

Its modules (tests/contract/test_lab_maps.py keeps this map true):

inputs.py               the requests replayed: a capture, or SPEED-Bench's categories mixed into one workload
env_file.py             `docker run --env-file` files read strictly, and each --serve side's environment
side_runs.py            without --serve: one side measured against a server started elsewhere (SideRuns in)
serve_rounds.py         --serve's shell: each round's servers started through the launcher, measured, stopped
serve_flow.py           --serve's run: the rounds, and the context the report needs (ServeBench in)
compare.py              the on/off comparison of one run per side (pure)
serve_report.py         --serve's report.json from its rounds: paired speedups with their intervals (pure)
acceptance_interval.py  how sure an acceptance figure is: the interval of a ratio over prompts (pure)
acceptance_matrix.py    configurations x categories of acceptance, with an Overall column (pure)
report_files.py         the report rebuilt from what the runs left under --out, and written
report_md.py            report.md from report.json's content (pure)
plots.py                PNG plots: throughput, latency and acceptance by draft position, off against on
"""
