"""What is served: the candidates, those left unserved, dropped, or served again.

Its modules (tests/contract/test_lab_maps.py keeps this map true):

candidates.py           candidate speculative configs, each server's environment, the recommended variables
simulated.py            the model-free methods' acceptance curves from recorded token ids, through the simulators
pruning.py              the rules that leave a candidate unserved or drop it, and the server budget
confirming.py           the rounds after the first: off and the contenders, within the budget, dropped on intervals
"""
