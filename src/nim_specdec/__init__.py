"""nim-specdec: a container entrypoint that serves an LLM through vLLM with speculative decoding."""

__version__ = "0.1.0"
