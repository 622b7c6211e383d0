"""A LeaderWorkerSet group run on two hosts (hosts.py): start each rank as its container starts, talk to the
leader over the link, kill a rank the way a node loses a pod (SIGKILL to its whole process tree), and time
what the other rank does. Every wait has a limit; `close` ends whatever is left."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from hosts import Host, Pair
from lws_launch import Group, RankStart

REPO = Path(__file__).resolve().parents[2]
PORT = 8000
# What the other side gets to notice a lost peer and stop: a pod's grace period is 120 s in the manifest.
LOST_PEER_BOUND_S = 150.0


@dataclass
class Rank:
    start: RankStart
    host: Host
    log: Path
    proc: subprocess.Popen | None = None
    started: float = 0.0
    ended: float | None = None

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


@dataclass
class GroupRun:
    pair: Pair
    group: Group
    folder: Path
    ranks: dict[str, Rank] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for role, host in (("leader", self.pair.leader), ("worker", self.pair.worker)):
            start = self.group.leader if role == "leader" else self.group.worker
            self.ranks[role] = Rank(start, host, self.folder / f"{role}.log")

    def start(self, role: str) -> Rank:
        rank = self.ranks[role]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("NIM_", "LWS_", "VLLM_"))}
        # The image's PATH: nim-specdec and getent, as the container's script calls them.
        env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '/usr/bin:/bin')}"
        env.update(rank.start.env)
        rank.log.parent.mkdir(parents=True, exist_ok=True)
        with rank.log.open("ab") as out:
            rank.proc = subprocess.Popen(
                rank.host.command(rank.start.argv),
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        rank.started = time.monotonic()
        return rank

    def exited(self, role: str) -> int | None:
        rank = self.ranks[role]
        code = rank.proc.poll() if rank.proc else None
        if code is not None and rank.ended is None:
            rank.ended = time.monotonic()
        return code

    def wait_exit(self, role: str, bound_s: float) -> tuple[int | None, float]:
        """(exit code or None if still running after bound_s, seconds waited)."""
        start = time.monotonic()
        while time.monotonic() - start < bound_s:
            if self.exited(role) is not None:
                break
            time.sleep(0.5)
        return self.exited(role), time.monotonic() - start

    def wait_log(self, role: str, text: str, bound_s: float) -> bool:
        """Whether the rank's log shows `text` within bound_s (False at once if the rank exited)."""
        start = time.monotonic()
        while time.monotonic() - start < bound_s:
            if text in self.ranks[role].log_text():
                return True
            if self.exited(role) is not None:
                return False
            time.sleep(0.5)
        return False

    def kill(self, role: str) -> float:
        """SIGKILL to the rank's whole process tree (a node lost, a pod evicted); returns when it was sent."""
        rank = self.ranks[role]
        assert rank.proc is not None
        with suppress(ProcessLookupError):
            os.killpg(rank.proc.pid, signal.SIGKILL)
        rank.proc.wait(30)
        rank.ended = time.monotonic()
        return rank.ended

    def http(
        self, method: str, path: str, body: Mapping[str, Any] | None = None, timeout: float = 60
    ) -> tuple[int, Any]:
        """A request to the leader's server from inside the leader's host (the port is not published)."""
        url = f"http://{self.pair.leader.address}:{PORT}{path}"
        code = (
            "import json, sys, urllib.request, urllib.error\n"
            "req = urllib.request.Request(sys.argv[1], data=sys.argv[3].encode() or None, method=sys.argv[2],\n"
            "                             headers={'content-type': 'application/json'})\n"
            "try:\n"
            "    r = urllib.request.urlopen(req, timeout=float(sys.argv[4]))\n"
            "    status, text = r.status, r.read().decode()\n"
            "except urllib.error.HTTPError as e:\n"
            "    status, text = e.code, e.read().decode()\n"
            "except OSError as e:\n"
            "    status, text = 0, str(e)\n"
            "print(json.dumps([status, text]))\n"
        )
        payload = json.dumps(body) if body is not None else ""
        done = subprocess.run(
            [
                "ip",
                "netns",
                "exec",
                self.pair.leader.name,
                sys.executable,
                "-c",
                code,
                url,
                method,
                payload,
                str(timeout),
            ],
            capture_output=True,
            text=True,
            timeout=timeout + 30,
        )
        status, text = json.loads(done.stdout)
        try:
            return status, json.loads(text)
        except ValueError:
            return status, text

    def stream(self, body: Mapping[str, Any], timeout: float) -> subprocess.Popen:
        """A streaming completion from inside the leader's host: its stdout says `first` once the first chunk has
        arrived (the request is in the engine then), and ends with `[status, chunks, error]` when the answer does."""
        code = (
            "import http.client, json, sys\n"
            "chunks, status, error = 0, 0, None\n"
            "try:\n"
            "    conn = http.client.HTTPConnection(sys.argv[1], int(sys.argv[2]), timeout=float(sys.argv[4]))\n"
            "    conn.request('POST', '/v1/completions', sys.argv[3], {'content-type': 'application/json'})\n"
            "    answer = conn.getresponse()\n"
            "    status = answer.status\n"
            "    for line in answer:\n"
            "        if line.startswith(b'data: {'):\n"
            "            chunks += 1\n"
            "            if chunks == 1:\n"
            "                print('first', flush=True)\n"
            "except (OSError, http.client.HTTPException) as e:\n"
            "    error = f'{type(e).__name__}: {e}'\n"
            "print(json.dumps([status, chunks, error]), flush=True)\n"
        )
        payload = json.dumps({**body, "stream": True})
        argv = [self.pair.leader.address, str(PORT), payload, str(timeout)]
        return subprocess.Popen(
            ["ip", "netns", "exec", self.pair.leader.name, sys.executable, "-c", code, *argv],
            stdout=subprocess.PIPE,
            text=True,
        )

    def wait_ready(self, bound_s: float) -> float | None:
        """Seconds from the leader's start until /v1/health/ready answers 200, None if a rank exited or the
        bound passed first."""
        leader = self.ranks["leader"]
        while time.monotonic() - leader.started < bound_s:
            if any(self.exited(role) is not None for role in self.ranks if self.ranks[role].proc):
                return None
            status, _ = self.http("GET", "/v1/health/ready", timeout=10)
            if status == 200:
                return time.monotonic() - leader.started
            time.sleep(2)
        return None

    def close(self) -> None:
        for rank in self.ranks.values():
            if rank.proc is not None and rank.proc.poll() is None:
                with suppress(ProcessLookupError):
                    os.killpg(rank.proc.pid, signal.SIGKILL)
                rank.proc.wait(30)
        # A rank's processes are in its session; anything that escaped it dies with the namespace's last user.
        for rank in self.ranks.values():
            if rank.proc is not None:
                with suppress(ProcessLookupError):
                    os.killpg(rank.proc.pid, signal.SIGKILL)
