"""SGLang, the second engine: what the launcher knows of it.

counters.py             SGLang's speculative metrics read into vLLM's units, and its endpoints (`report`)
"""
