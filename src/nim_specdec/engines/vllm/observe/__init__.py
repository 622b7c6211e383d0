"""Reading a running vLLM server: its spec-decode counters (Prometheus), turned into acceptance figures."""
