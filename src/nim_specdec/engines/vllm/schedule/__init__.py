"""The K schedule (`num_speculative_tokens_per_batch_size`), decided from the speculative config and the runner
release/ picks: its entries checked as vLLM checks them, its fate on that runner and release (dropped: refused;
kept at the cost of full CUDA graphs: a warning), and the plan's `model_runner` section that reports both."""
