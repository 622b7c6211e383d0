"""The engine measured on and the engine that will serve, and how they differ.

Its modules (tests/contract/test_lab_maps.py keeps this map true):

device.py               the device the servers ran on: GPUs through NVML, else the CPU model
engine.py               the measured and the serving engine as plain data (runner, graph mode, async scheduling)
engine_log.py           what a vLLM server's log says about its engine
serving.py              the recommendation against the serving engine: a dropped schedule falls back to a static K
measured.py             the edges of the engine records: a server's log, its plan and device; the serving target
"""
