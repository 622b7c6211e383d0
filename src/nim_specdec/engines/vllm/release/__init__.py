"""What the engine is and how it will run, decided from the vLLM release the launcher runs with (its snapshot),
the platform and device, and the resolved engine arguments: what that release accepts and what changed in it,
which model runner it picks, the CUDA graph and async-scheduling modes it settles, the numbers it is given,
where its start-up caches go and what the CPU build preloads. The engine package's lowest layer: no other part of
engines/vllm/ is imported here."""
