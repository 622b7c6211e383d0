"""The cost model: what a K gains and costs at each batch size, and the K and method it chooses.

Its modules (tests/contract/test_lab_maps.py keeps this map true):

acceptance.py           tokens a request gains per engine step at each K: one method's acceptance curve
cost_model.py           one engine step's cost on this hardware, fitted on closed-loop measurements
choice.py               the best K per batch size for each method, then the method, or speculation off
"""
