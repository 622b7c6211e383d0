"""Payload capture: records the request bodies the vLLM server receives, for replay with AIPerf. A stage of
its own, above the settings (config/capture_config.py parses NIM_CAPTURE_ENABLE / NIM_CAPTURE_ARGS with every
other variable) and below the planner, which adds the middleware to vLLM's arguments.

launcher.py    the launcher's side: the vLLM arguments that install the middleware, and the start-up check
               that the capture file can be written
file.py        opening the capture file: owner-only, never through a link (the check and the writer share it)
formats.py     the JSONL line formats (mooncake_payload, raw_payload) AIPerf reads
writer.py      bounded queue + writer thread appending to the file under flock
counters.py    Prometheus counters on the server's /metrics
middleware.py  the ASGI middleware the vLLM server runs

Nothing here is imported by the package at start-up; vLLM imports middleware.py by name.
"""
