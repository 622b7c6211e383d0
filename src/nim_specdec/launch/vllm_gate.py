"""Running the vLLM check from `plan --check-vllm`, `prepare` and `serve`: when the files it needs are
here, with vLLM's log quiet, timed; a refusal raises ConfigError (exit 2). `serve` defers it to the
process it execs (launch/vllm_boot.py), where vLLM's server reuses the import the check pays for."""

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


DEFERRED = {"ran": False, "seconds": 0.0, "skipped": None, "deferred": "in the server's process, before vLLM starts"}


def defer_check(plan: Mapping[str, Any]) -> dict[str, Any]:
    """serve's outcome where run_check would run now: deferred to vllm_boot, or why it cannot run yet."""
    missing = unavailable(plan, local_paths(plan))
    return {"ran": False, "seconds": 0.0, "skipped": missing} if missing else dict(DEFERRED)


def settled(check: Mapping[str, Any] | None) -> bool:
    """Whether the check ran, or will run in the server's process: no other check is needed."""
    return bool(check and (check.get("ran") or check.get("deferred")))
