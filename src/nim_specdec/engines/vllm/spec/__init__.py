"""The speculative config as vLLM reads it, decided from the release's snapshot: its keys, kinds and bounds,
vLLM's cross-field rules, the method vLLM infers when the config names none, and what vLLM refuses before the
config is read (the Arctic Inference plugin)."""
