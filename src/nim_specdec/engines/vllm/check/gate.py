"""Running the vLLM check from `plan --check-vllm`, `prepare` and `serve`: when the files it needs are
here, with vLLM's log quiet, timed; a refusal raises ConfigError (exit 2). `serve` defers it to the
process it execs (engines/vllm/boot/vllm_boot.py), where vLLM's server reuses the import the check pays for.

Where vLLM cannot judge in this process (no device), the outcome is "not checked", exit 0: nothing
more can be learnt here, and serve has the server's process check again before vLLM starts."""

from __future__ import annotations

import time
from typing import Callable, Sequence

from nim_specdec.engines.protocol.sections import NOT_CHECKED, VllmCheckResult, settled
from nim_specdec.engines.vllm.check.judge import check_plan
from nim_specdec.engines.vllm.check.request import CheckRequest, local_paths, unavailable

__all__ = ["DEFERRED", "NOT_CHECKED", "run_check", "settled"]

DEFERRED = VllmCheckResult(ran=False, deferred="in the server's process, before vLLM starts")


def run_check(
    request: CheckRequest, secrets: Sequence[str], warn: Callable[[str], None], defer: bool = False
) -> VllmCheckResult:
    """The check's outcome for the command; `status` "not checked" where vLLM could not judge here.
    `defer` (serve): where it could run now, leave it to vllm_boot and return DEFERRED instead.
    `secrets`: the secret variables' values, masked in vLLM's words."""
    paths = local_paths(request)
    missing = unavailable(request, paths)
    if missing:
        warn(f"vLLM check skipped: {missing}")
        return VllmCheckResult(ran=False, skipped=missing)
    if defer:
        return DEFERRED
    start = time.monotonic()
    note = check_plan(request, secrets, paths)
    seconds = round(time.monotonic() - start, 2)
    if note is not None and not note.checked:
        warn(f"vLLM check: {NOT_CHECKED}: {note.text}")
        return VllmCheckResult(ran=False, seconds=seconds, skipped=note.text, status=NOT_CHECKED)
    if note:
        warn(f"vLLM check: {note.text}")
    return VllmCheckResult(ran=True, seconds=seconds, skipped=note.text if note else None)
