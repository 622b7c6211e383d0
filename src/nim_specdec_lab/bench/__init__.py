"""On/off benchmark of speculative decoding over a captured trace or SPEED-Bench categories, driven by AIPerf."""
