"""Offline prediction of vLLM's n-gram speculative decoding from recorded greedy requests.

Its modules (tests/contract/test_lab_maps.py keeps this map true):

trace.py                captured traffic (mooncake_payload lines) and the greedy requests that replay it (pure)
http_replay.py          the HTTP edge: captured requests replayed greedily, their token ids recorded and saved
corpus.py               token streams of the recorded requests, with the n-gram tables every grid point shares
reference.py            a deliberately naive model of vLLM's V1 n-gram proposer: the simulator's specification
proposer_v2.py          the same for vLLM's V2 model runner
simulator.py            exact, vectorized simulation of the V1 n-gram proposer over the recorded requests
simulator_v2.py         the same for the V2 model runner
model_runner.py         which vLLM model runner, and so which n-gram drafter, the serving engine will use
grid.py                 the grid of n-gram settings, the cost model that ranks them, and the recommendation
"""
