"""The measured runs: how a run is measured, its repeats, the rounds and the table of all of them.

Its modules (tests/contract/test_lab_maps.py keeps this map true):

measurement.py          the options every server is measured with, a run (Round), its request count, its judged figure
repeats.py              repeated runs of one configuration: the one that stands for them and their spread
rounds.py               the rounds: which servers start in what order (order_of), and every run they measured (Table)
"""
