"""Running the vLLM check from `plan --check-vllm`, `prepare` and `serve`: when the files it needs are
here, with vLLM's log quiet, timed; a refusal raises ConfigError (exit 2). `serve` defers it to the
process it execs (launch/vllm_boot.py), where vLLM's server reuses the import the check pays for."""

from __future__ import annotations

import time
from typing import Any, Callable, Mapping

from nim_specdec.launch.vllm_check import check_plan, local_paths, unavailable


DEFERRED = {"ran": False, "seconds": 0.0, "skipped": None, "deferred": "in the server's process, before vLLM starts"}


def run_check(plan: Mapping[str, Any], env: Mapping[str, str], warn: Callable[[str], None],
              defer: bool = False) -> dict[str, Any]:
    """The check's outcome for the plan: {"ran": bool, "seconds": float, "skipped": reason or None}.
    `defer` (serve): where it could run now, leave it to vllm_boot and return DEFERRED instead."""
    paths = local_paths(plan)
    missing = unavailable(plan, paths)
    if missing:
        warn(f"vLLM check skipped: {missing}")
        return {"ran": False, "seconds": 0.0, "skipped": missing}
    if defer:
        return dict(DEFERRED)
    start = time.monotonic()
    note = check_plan(plan, env, paths)
    if note:
        warn(f"vLLM check: {note}")
    return {"ran": True, "seconds": round(time.monotonic() - start, 2), "skipped": note}


def settled(check: Mapping[str, Any] | None) -> bool:
    """Whether the check ran, or will run in the server's process: no other check is needed."""
    return bool(check and (check.get("ran") or check.get("deferred")))
