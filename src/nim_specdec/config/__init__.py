"""The pure core: environment and vLLM arguments parsed into typed values, merged into a plan. No I/O."""
