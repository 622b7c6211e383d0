"""Running the vLLM check from `plan --check-vllm`, `prepare` and `serve`: when the files it needs are
here, with vLLM's log quiet, timed; a refusal raises ConfigError (exit 2). `serve` defers it to the
process it execs (launch/vllm_boot.py), where vLLM's server reuses the import the check pays for.

Where vLLM cannot judge in this process (no device), the outcome is "not checked", exit 0: nothing
more can be learnt here, and serve has the server's process check again before vLLM starts."""

from __future__ import annotations

import time
from typing import Any, Callable, Mapping

from nim_specdec.launch.vllm_check import check_plan
from nim_specdec.launch.vllm_check_args import local_paths, unavailable


DEFERRED = {"ran": False, "seconds": 0.0, "skipped": None, "deferred": "in the server's process, before vLLM starts"}
NOT_CHECKED = "not checked"


def run_check(
    plan: Mapping[str, Any], env: Mapping[str, str], warn: Callable[[str], None], defer: bool = False
) -> dict[str, Any]:
    """The check's outcome for the plan: {"ran": bool, "seconds": float, "skipped": reason or None}, with
    "status": "not checked" where vLLM could not judge here.
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
    seconds = round(time.monotonic() - start, 2)
    if note is not None and not note.checked:
        warn(f"vLLM check: {NOT_CHECKED}: {note.text}")
        return {"ran": False, "seconds": seconds, "skipped": note.text, "status": NOT_CHECKED}
    if note:
        warn(f"vLLM check: {note.text}")
    return {"ran": True, "seconds": seconds, "skipped": note.text if note else None}


def not_checked(check: Mapping[str, Any] | None) -> bool:
    """Whether vLLM could not judge the plan in the process that ran the check."""
    return bool(check and check.get("status") == NOT_CHECKED)


def settled(check: Mapping[str, Any] | None) -> bool:
    """Whether the check ran, will run in the server's process, or cannot judge in this process: no
    other check is needed here."""
    return bool(check and (check.get("ran") or check.get("deferred") or not_checked(check)))


def check_in_server(check: Mapping[str, Any] | None) -> bool:
    """Whether serve execs vllm_boot, which checks before vLLM starts: deferred, or not checked here."""
    return bool(check and (check.get("deferred") or not_checked(check)))
