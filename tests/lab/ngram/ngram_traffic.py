"""Traffic samples for the end-to-end checks, as a mooncake_payload capture."""

from __future__ import annotations

import json
from pathlib import Path

from vllm_runs import MAX_MODEL_LEN, SERVED_NAME

__all__ = ["MAX_MODEL_LEN", "PAYLOADS", "write_capture"]

PAYLOADS = [
    {
        "model": SERVED_NAME,
        "max_tokens": 40,
        "messages": [{"role": "user", "content": "the quick brown fox jumps over the lazy dog " * 3}],
    },
    {
        "model": SERVED_NAME,
        "max_tokens": 17,
        "messages": [
            {"role": "system", "content": "repeat after me"},
            {"role": "user", "content": "drafts tokens that the target model verifies"},
        ],
    },
    {
        "model": SERVED_NAME,
        "max_tokens": 64,
        "temperature": 0.9,
        "stop": ["zz"],
        "messages": [{"role": "user", "content": "speculative decoding accepts tokens when they match"}],
    },
    # Runs up to the model length: exercises the trimming of drafts near max_model_len.
    {
        "model": SERVED_NAME,
        "ignore_eos": True,
        "messages": [{"role": "user", "content": "a lazy dog while the fox jumps"}],
    },
    {
        "model": SERVED_NAME,
        "max_tokens": 30,
        "prompt": "one pass and accepts when they match its own greedy choice, one pass and",
    },
]


def write_capture(path: Path) -> Path:
    path.write_text("".join(json.dumps({"timestamp": 1000 * i, "payload": p}) + "\n" for i, p in enumerate(PAYLOADS)))
    return path
