"""How tune's decision behaves over simulated worlds (pure; bench/ prints them).

Its modules (tests/contract/test_lab_maps.py keeps this map true):

noise_study.py          how often the decision recommends what, over simulated noisy worlds
pruning_study.py        whether pruning changes the answer against the full sweep
selection_study.py      how often the recommendation's interval covers its true speed-up
"""
