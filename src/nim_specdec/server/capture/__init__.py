"""Payload capture: records the request bodies the vLLM server receives, for replay with AIPerf.

config.py      NIM_CAPTURE_ENABLE / NIM_CAPTURE_ARGS -> CaptureConfig, and the vLLM arguments it adds
preflight.py   the launcher's start-up check that the capture file can be written
formats.py     the JSONL line formats (mooncake_payload, raw_payload) AIPerf reads
writer.py      bounded queue + writer thread appending to the file under flock
metrics.py     Prometheus counters on the server's /metrics
middleware.py  the ASGI middleware the vLLM server runs

Nothing here is imported by the package at start-up; vLLM imports middleware.py by name.
"""
