"""A headless rank of a multi-node launch stops by itself when its leader is gone.

vLLM's headless ranks (`--headless --node-rank R`, R > 0) watch only their own local processes: when the
leader's node is lost, a worker waits on the leader's message queue forever, holding its GPUs, and the
group cannot come back whole. So the launcher watches the leader from the worker's process: once the
leader's server port (`--master-addr`, `--port`) has accepted a connection, `misses` failed connections in
a row, `interval` seconds apart, mean the leader is gone; the worker prints one line and exits 4 (an
endpoint that cannot be reached), its engine processes with it, and its pod restarts.

The leader's own HTTP port is watched rather than vLLM's rendezvous port: it is up exactly while the
leader serves, and a TCP connect to it asks nothing of the server.
"""

from __future__ import annotations

import functools
import os
import socket
import threading
import time
from dataclasses import dataclass
from typing import Callable, Sequence

from nim_specdec.errors import UnreachableError
from nim_specdec.text.logs import error_line

INTERVAL_S = 5.0
MISSES = 6  # about 30 s from the leader's loss to the worker's exit


@dataclass(frozen=True)
class LeaderWatch:
    address: str
    port: int
    node_rank: int
    interval_s: float = INTERVAL_S
    misses: int = MISSES

    def seen_line(self) -> str:
        return (
            f"--master-addr: watching the leader {self.address} (node rank 0) on port {self.port}: node rank "
            f"{self.node_rank} stops {self.interval_s * self.misses:.0f} s after it stops accepting connections"
        )

    def lost_line(self, seconds: float) -> str:
        return (
            f"--master-addr: the leader {self.address} (node rank 0) has not accepted a connection on port "
            f"{self.port} for {seconds:.0f} s; node rank {self.node_rank} stops so that the group restarts whole"
        )


def _value(argv: Sequence[str], name: str) -> str | None:
    found = None
    for i, token in enumerate(argv):
        if token == name and i + 1 < len(argv):
            found = argv[i + 1]
        elif token.startswith(name + "="):
            found = token.split("=", 1)[1]
    return found


def leader_watch(argv: Sequence[str]) -> LeaderWatch | None:
    """The watch a headless rank of a multi-node launch needs, from vLLM's command line; None otherwise."""
    if "--headless" not in argv:
        return None
    try:
        nnodes = int(_value(argv, "--nnodes") or "1")
        node_rank = int(_value(argv, "--node-rank") or "0")
        port = int(_value(argv, "--port") or "8000")
    except ValueError:
        return None  # vLLM's parser refuses it with its own message
    address = _value(argv, "--master-addr")
    if nnodes < 2 or node_rank < 1 or not address:
        return None
    return LeaderWatch(address, port, node_rank)


def leader_lost_rank_line(argv: Sequence[str], engine_died: bool) -> str | None:
    """The leader's one line when its engine died under a multi-node launch (vLLM then exits 0), else None."""
    if not engine_died or "--headless" in argv:
        return None
    try:
        nnodes = int(_value(argv, "--nnodes") or "1")
        node_rank = int(_value(argv, "--node-rank") or "0")
    except ValueError:
        return None
    if nnodes < 2 or node_rank != 0:
        return None
    lost = "node rank 1" if nnodes == 2 else f"a node rank of 1..{nnodes - 1}"
    return (
        f"--nnodes {nnodes}: vLLM's engine on the leader (node rank 0) stopped: {lost} was lost or failed "
        "(vLLM's log above names the peer's address); the leader exits so that the group restarts whole"
    )


def _reachable(address: str, port: int, timeout: float) -> bool:
    try:
        with socket.create_connection((address, port), timeout=timeout):
            return True
    except OSError:
        return False


def watch(
    spec: LeaderWatch,
    on_lost: Callable[[str], None],
    reachable: Callable[[str, int, float], bool] = _reachable,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    stop: threading.Event | None = None,
    on_seen: Callable[[str], None] | None = None,
) -> None:
    """Blocks until the leader, once seen, missed `spec.misses` connections in a row (then calls on_lost once),
    or until `stop` is set. Before the leader first answers nothing counts: vLLM's rendezvous waits for it.
    `on_seen` is called once, when the leader first answers: from then on its loss is counted."""
    last_seen, missed = None, 0
    stop = stop or threading.Event()
    while not stop.is_set():
        if reachable(spec.address, spec.port, spec.interval_s):
            if last_seen is None and on_seen is not None:
                on_seen(spec.seen_line())
            last_seen, missed = clock(), 0
        elif last_seen is not None:
            missed += 1
            if missed >= spec.misses:
                on_lost(spec.lost_line(clock() - last_seen))
                return
        sleep(spec.interval_s)


def _say(secrets: Sequence[str], line: str) -> None:
    """The watch's one line when it starts counting (what a platform engineer reads: which leader, which bound)."""
    error_line(f"nim-specdec: {line}", secrets)


def _stop_rank(secrets: Sequence[str], line: str) -> None:
    """The shell: the one line, then this rank's engine processes, then this process, with exit 4."""
    import psutil  # noqa: PLC0415 - vLLM's own dependency, present wherever a rank runs

    error_line(f"nim-specdec: error: {line}", secrets)
    for child in psutil.Process().children(recursive=True):
        try:
            child.kill()
        except psutil.Error:
            pass
    os._exit(UnreachableError.exit_code)


def start(argv: Sequence[str], secrets: Sequence[str]) -> LeaderWatch | None:
    """Watch the leader in a daemon thread of this process when argv is a headless rank's command; `secrets`:
    the values its last line masks."""
    spec = leader_watch(argv)
    if spec is not None:
        on_lost = functools.partial(_stop_rank, secrets)
        on_seen = functools.partial(_say, secrets)
        threading.Thread(
            target=watch, args=(spec, on_lost), kwargs={"on_seen": on_seen}, daemon=True, name="nim-leader-watch"
        ).start()
    return spec
