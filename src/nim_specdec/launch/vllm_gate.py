"""Running the vLLM check from `plan --check-vllm`, `prepare` and `serve`: when the files it needs are
here, with vLLM's log quiet, timed; a refusal raises ConfigError (exit 2)."""

from __future__ import annotations

import time
from typing import Any, Callable, Mapping

from nim_specdec.launch.vllm_check import check_plan, local_paths, unavailable


def run_check(plan: Mapping[str, Any], env: Mapping[str, str], warn: Callable[[str], None]) -> dict[str, Any]:
    """The check's outcome for the plan: {"ran": bool, "seconds": float, "skipped": reason or None}."""
    paths = local_paths(plan)
    missing = unavailable(plan, paths)
    if missing:
        warn(f"vLLM check skipped: {missing}")
        return {"ran": False, "seconds": 0.0, "skipped": missing}
    start = time.monotonic()
    note = check_plan(plan, env, paths)
    if note:
        warn(f"vLLM check: {note}")
    return {"ran": True, "seconds": round(time.monotonic() - start, 2), "skipped": note}
