"""A download killed half-way (SIGKILL, as a pod is killed) and started again, with the bytes the store sent
each time, counted by the fault proxy in front of it (what went out on the wire, not what the client says).

Shared by tests/fetchers/volume/test_resume.py (the bound) and bench/bench_resume.py (the figures).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from servers.fault_proxy import Fault, FaultProxy

SHARD_PREFIX = "model-"


def shard_files(shards: int = 40, size: int = 64 * 1024) -> dict[str, bytes]:
    """A sharded checkpoint in miniature: a config and `shards` weight files of `size` bytes each."""
    files = {"config.json": b'{"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 1}'}
    for i in range(1, shards + 1):
        files[f"{SHARD_PREFIX}{i:05d}-of-{shards:05d}.safetensors"] = os.urandom(size)
    return files


def sent(proxy: FaultProxy) -> int:
    """Bytes of the weight files the store sent, over every GET since the proxy's last reset."""
    return sum(r.sent for r in proxy.requests("GET", SHARD_PREFIX))


@dataclass(frozen=True)
class Figures:
    total: int  # bytes of the weight files
    first: int  # sent to the start that was killed
    second: int  # sent to the start after it
    second_s: float  # how long the second start took

    @property
    def ratio(self) -> float:
        return self.second / self.total


def kill_at_half(
    proxy: FaultProxy, env: dict[str, str], uri: str, total: int, bytes_per_second: int, timeout: float = 120
) -> int:
    """Start `nim-specdec download URI` with the weights slowed to `bytes_per_second` per connection and SIGKILL
    it once half of `total` went out; the bytes sent to it."""
    proxy.reset()
    proxy.inject(Fault("slow", SHARD_PREFIX, times=-1, bytes_per_second=bytes_per_second))
    cmd = [sys.executable, "-m", "nim_specdec", "download", uri]
    first = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + timeout
    try:
        while sent(proxy) < total // 2:
            if first.poll() is not None:
                raise AssertionError(f"the first start ended before half: {first.stderr.read()[-2000:]}")
            if time.monotonic() > deadline:
                raise AssertionError(f"half of the bytes never went out ({sent(proxy)} of {total})")
            time.sleep(0.01)
    finally:
        first.kill()
        first.wait(timeout=30)
    time.sleep(0.3)  # the proxy's writes to the dead connection end
    return sent(proxy)


def start_again(proxy: FaultProxy, env: dict[str, str], uri: str, timeout: float = 120) -> tuple[int, float, str]:
    """`nim-specdec download URI` with the store well: (bytes sent, seconds, its stdout and stderr)."""
    proxy.reset()
    started = time.monotonic()
    cmd = [sys.executable, "-m", "nim_specdec", "download", uri]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    took = time.monotonic() - started
    if done.returncode != 0:
        raise AssertionError(f"the second start failed: {done.stderr[-2000:]}")
    return sent(proxy), took, done.stdout.strip() + "\n" + done.stderr


def kill_at_half_then_resume(
    proxy: FaultProxy, env: dict[str, str], uri: str, total: int, bytes_per_second: int, timeout: float = 120
) -> tuple[Figures, str]:
    """kill_at_half, then start_again on the same cache: the figures and the second start's output."""
    first = kill_at_half(proxy, env, uri, total, bytes_per_second, timeout)
    second, took, output = start_again(proxy, env, uri, timeout)
    return Figures(total, first, second, took), output


def cached_folder(output: str) -> Path:
    return Path(output.splitlines()[0])
