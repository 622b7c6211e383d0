"""Child processes that never outlive what started them: tied to their parent's death, each in a process
group of its own so that a stop reaches whatever it started in turn (s5cmd's workers, vLLM's engine)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import Callable


def die_with_parent(signum: int = signal.SIGKILL) -> Callable[[], None] | None:
    """A `preexec_fn` asking the kernel to send `signum` to the child when its parent dies (even by SIGKILL);
    None where the kernel has no such request (not Linux). The request survives the child's exec.

    The kernel ties the child to the *thread* that started it: start it from a thread that lives as long."""
    if sys.platform != "linux":
        return None

    def request() -> None:  # pragma: no cover - runs in the child between fork and exec
        try:
            import ctypes  # noqa: PLC0415 - +3 modules (~3 ms) on serve; Linux children only

            PR_SET_PDEATHSIG = 1  # noqa: N806
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signum)
        except (OSError, AttributeError):
            pass  # the stop paths below still clean up

    return request


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:  # a pid reused by someone else's process: not ours any more
        return False


def kill_group(pgid: int, signum: int = signal.SIGKILL) -> bool:
    """Send `signum` to the process group; False when it is gone already (or no longer ours)."""
    try:
        os.killpg(pgid, signum)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def stop_group(proc: subprocess.Popen, grace_s: float = 0.0) -> None:
    """Stop a child started with start_new_session=True and everything in its group: SIGTERM first when
    `grace_s` is given (a download unwinds through its cleanup), SIGKILL after it or at once; then reap it."""
    if grace_s > 0 and kill_group(proc.pid, signal.SIGTERM):
        try:
            proc.wait(timeout=grace_s)
            return
        except subprocess.TimeoutExpired:
            pass
    kill_group(proc.pid, signal.SIGKILL)
    proc.wait()
