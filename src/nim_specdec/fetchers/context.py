"""Building a FetchContext from the process environment (the imperative edge; the rest takes a mapping)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Callable, Mapping

from nim_specdec.fetchers.base import FetchContext
from nim_specdec.fetchers.settings import truthy

DEFAULT_CACHE = "/opt/nim/.cache"


def cache_dir(env: Mapping[str, str]) -> Path:
    return Path(env.get("NIM_CACHE_PATH") or DEFAULT_CACHE)


def stderr_logger(env: Mapping[str, str]) -> Callable[[str], None]:
    jsonl = truthy(env.get("NIM_JSONL_LOGGING"))

    def log(message: str) -> None:
        if jsonl and not message.startswith("{"):
            message = json.dumps({"event": "log", "logger": "nim-specdec.fetch", "message": message})
        elif not jsonl:
            message = f"nim-specdec: {message}"
        print(message, file=sys.stderr, flush=True)

    return log


def context_from_env(env: Mapping[str, str], log: Callable[[str], None] | None = None) -> FetchContext:
    """NIM_CACHE_PATH, and NIM_DISABLE_MODEL_DOWNLOAD for cache-only (hf:// also honours HF_HUB_OFFLINE)."""
    return FetchContext(
        env=dict(env),
        cache_dir=cache_dir(env),
        offline=truthy(env.get("NIM_DISABLE_MODEL_DOWNLOAD")),
        log=log or stderr_logger(env),
    )
