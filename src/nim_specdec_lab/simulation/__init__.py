"""`nim-specdec simulate` and `tune-ngram`: the model-free methods simulated exactly on captured traffic, ranked.

Its modules (tests/contract/test_lab_maps.py keeps this map true):

inputs.py               what a simulation runs on: the records (saved, or replayed) and the n-gram setting in use
ranking.py              every method's grid simulated on the records, ranked and recommended (Simulation in)
"""
