"""Where vLLM's start-up caches go: under $NIM_CACHE_PATH, so that a restarted container starts warm.

vLLM compiles the model at start (torch.compile; on GPUs also Triton kernels and FlashInfer JIT
modules) and keeps the results under VLLM_CACHE_ROOT, by default in the container's home, which a
restart loses. The plan points those caches at <NIM_CACHE_PATH>/compile/<key>/, where the key names
the vLLM build, the model and the configuration, so that none of them ever reads another's
artefacts. A variable the user set is left alone. Pure: launch/compile_cache/claim.py claims the
directory at start (one writer per key; see there).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Mapping

from nim_specdec.engines.protocol.sections import CompileCachePlan
from nim_specdec.engines.vllm.release.host_vars import CACHE_DIRS

# Engine arguments that change what the server is called, where it listens or how it stops, never what it
# compiles.
_NOT_IN_KEY = frozenset(
    {
        "port",
        "host",
        "served_model_name",
        "api_key",
        "middleware",
        "uvicorn_log_level",
        "disable_log_requests",
        "enable_log_requests",
        "disable_log_stats",
        "ssl_keyfile",
        "ssl_certfile",
        "root_path",
        "allowed_origins",
        "shutdown_timeout",  # how long SIGTERM drains; the launcher passes it by default
    }
)
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def cache_key(
    flavor: str | None,
    version: str,
    model: str,
    draft: str | None,
    speculative: Mapping | None,
    engine_args: Mapping[str, Any],
) -> str:
    """<flavor>-<version>-<16 hex>: readable for people, distinct for every model and configuration."""
    compiled = {k: v for k, v in engine_args.items() if k not in _NOT_IN_KEY}
    document = json.dumps(
        {"model": model, "draft": draft, "speculative": speculative, "engine": compiled}, sort_keys=True, default=str
    )
    digest = hashlib.sha256(document.encode()).hexdigest()[:16]
    build = _UNSAFE.sub("-", f"{flavor or 'vllm'}-{version or 'unknown'}")[:60]
    return f"{build}-{digest}"


def compile_cache_plan(cache_path: str, key: str, user_set: tuple[str, ...]) -> CompileCachePlan:
    """The directory for this key and the variables the server gets (those the user set stay theirs)."""
    root = f"{cache_path.rstrip('/')}/compile/{key}"
    return CompileCachePlan(
        dir=root,
        env={name: f"{root}/{sub}" for name, sub in CACHE_DIRS.items() if name not in user_set},
        user_set=sorted(user_set),
    )


def relocate(entry: CompileCachePlan, new_root: str) -> dict[str, str]:
    """The same variables pointing under another root (the local fallback)."""
    return {name: new_root + path[len(entry.dir) :] for name, path in entry.env.items()}
