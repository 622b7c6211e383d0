"""Start-up overhead of the launcher, and tokens/s with speculation on and off, on the demo model.

    python bench/bench_startup.py [--rounds N] [--model-dir DIR] [--max-tokens N]
    python bench/bench_startup.py --mode cold-warm [--rounds N]
    python bench/bench_startup.py --mode preload [--rounds N]

Each round starts `nim-specdec serve` and then the very vLLM command it execs (taken from
`nim-specdec plan`), one after the other, and times process start to `GET /health` 200. The order
alternates between rounds so that warm caches favour neither side. Printed: each time, the medians and
their ratio (launcher / direct). Then greedy tokens/s with the n-gram config (from the launcher rounds) and
with NIM_SPECDEC_ENABLE=0 (one more server). One server at a time; every wait is bounded.

--mode cold-warm: each round starts the launcher on a fresh NIM_CACHE_PATH (cold: vLLM compiles), then
again on the same one (warm: vLLM's caches are found under NIM_CACHE_PATH/compile); medians and ratio.
--mode preload: greedy tokens/s with speculation on, the launcher's CPU preloads against vLLM's own
default (LD_PRELOAD set to the torch libgomp vLLM would preload itself: a user's LD_PRELOAD wins),
alternated.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from nim_specdec_lab.server_process import free_port

NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 1}
PROMPTS = ("The quick brown fox jumps over the lazy dog.", "def add(a, b):", "One, two, three, four, five,")
READY_DEADLINE_S = 600


def get_status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as err:
        return err.code
    except (urllib.error.URLError, OSError):
        return 0


def post(url: str, payload: dict) -> dict:
    request = urllib.request.Request(url, json.dumps(payload).encode(), {"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as response:
        return json.loads(response.read())


class Server:
    def __init__(self, argv: list[str], env: dict, port: int, log: Path) -> None:
        self.port = port
        self.log = log
        with open(log, "wb") as out:
            self.started = time.monotonic()
            self.proc = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def wait_health(self) -> float:
        end = self.started + READY_DEADLINE_S
        while time.monotonic() < end:
            if get_status(f"http://127.0.0.1:{self.port}/health") == 200:
                return time.monotonic() - self.started
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        self.stop()
        sys.exit(f"server did not become ready; log tail:\n{self.log.read_text(errors='replace')[-3000:]}")

    def tokens_per_second(self, max_tokens: int) -> float:
        base = f"http://127.0.0.1:{self.port}"
        model = json.loads(urllib.request.urlopen(base + "/v1/models", timeout=10).read())["data"][0]["id"]
        post(base + "/v1/completions", {"model": model, "prompt": "warm up", "max_tokens": 4, "temperature": 0})
        tokens, started = 0, time.monotonic()
        for prompt in PROMPTS:
            answer = post(
                base + "/v1/completions", {"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0}
            )
            tokens += answer["usage"]["completion_tokens"]
        return tokens / (time.monotonic() - started)

    def stop(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=60)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def launcher_env(model_dir: Path, port: int, work: Path, enable: bool) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NIM_")}
    env.update(
        HF_HUB_OFFLINE="1",
        VLLM_CPU_KVCACHE_SPACE="1",
        NIM_MODEL_PATH=str(model_dir / "target"),
        NIM_SERVER_PORT=str(port),
        NIM_CACHE_PATH=str(work / "cache"),
        NIM_SPECDEC_ENABLE="1" if enable else "0",
    )
    if enable:
        env["NIM_SPECDEC_ARGS"] = json.dumps({"speculative_config": json.dumps(NGRAM)})
    return env


def launcher_argv() -> list[str]:
    return [sys.executable, "-m", "nim_specdec", "serve", "--host", "127.0.0.1"]


def direct_argv(env: dict) -> list[str]:
    done = subprocess.run(
        [*launcher_argv()[:3], "plan", "--host", "127.0.0.1"], env=env, capture_output=True, text=True, timeout=120
    )
    if done.returncode != 0:
        sys.exit(f"nim-specdec plan failed: {done.stderr.strip()}")
    return json.loads(done.stdout)["argv"]


def start_ready(env: dict, log: Path, max_tokens: int | None = None) -> tuple[float, float | None]:
    server = Server(launcher_argv(), env, int(env["NIM_SERVER_PORT"]), log)
    try:
        seconds = server.wait_health()
        return seconds, (server.tokens_per_second(max_tokens) if max_tokens else None)
    finally:
        server.stop()


def cold_warm(model_dir: Path, work: Path, rounds: int) -> None:
    times: dict[str, list[float]] = {"cold": [], "warm": []}
    for round_no in range(rounds):
        cache = work / f"volume-{round_no}"  # a fresh volume for this round's cold start
        for kind in ("cold", "warm"):
            port = free_port()
            env = launcher_env(model_dir, port, work, enable=True)
            env["NIM_CACHE_PATH"] = str(cache)
            seconds, _ = start_ready(env, work / f"{kind}-{round_no}.log")
            times[kind].append(seconds)
            print(f"round {round_no} {kind} start->ready {seconds:6.2f} s", flush=True)
    cold, warm = statistics.median(times["cold"]), statistics.median(times["warm"])
    print(
        f"median start->ready (launcher, n-gram on): cold {cold:.2f} s, warm {warm:.2f} s, ratio warm/cold {warm / cold:.3f}"  # noqa: E501
    )


def torch_libgomp() -> str:
    import glob

    import torch

    root = Path(torch.__file__).parent
    found = sorted(
        glob.glob(str(root.parent / "torch.libs" / "libgomp*.so*")) + glob.glob(str(root / "lib" / "libgomp*.so*"))
    )
    return found[0] if found else ""


def preload(model_dir: Path, work: Path, rounds: int, max_tokens: int) -> None:
    tps: dict[str, list[float]] = {"launcher preloads": [], "vLLM default": []}
    for round_no in range(rounds):
        order = list(tps) if round_no % 2 == 0 else list(reversed(tps))
        for kind in order:
            port = free_port()
            env = launcher_env(model_dir, port, work, enable=True)
            env.pop("LD_PRELOAD", None)
            if kind == "vLLM default":
                env["LD_PRELOAD"] = torch_libgomp()
            _, rate = start_ready(env, work / f"preload-{round_no}-{kind[:6]}.log", max_tokens)
            tps[kind].append(rate)
            print(f"round {round_no} {kind:18s} {rate:8.1f} tokens/s", flush=True)
    on, off = statistics.median(tps["launcher preloads"]), statistics.median(tps["vLLM default"])
    print(
        f"greedy tokens/s, n-gram on (max_tokens {max_tokens}, {len(PROMPTS)} prompts): "
        f"with the launcher's preloads {on:.1f}, vLLM's default {off:.1f}, ratio {on / off:.3f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("launcher-direct", "cold-warm", "preload"), default="launcher-direct")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--model-dir", type=Path, help="demo model directory (made if absent; default: a temporary one)"
    )
    parser.add_argument("--max-tokens", type=int, default=128)
    args = parser.parse_args()

    from nim_specdec_lab.demo_model import make_demo_model

    work = Path(tempfile.mkdtemp(prefix="bench-startup-"))
    model_dir = args.model_dir or work / "demo-model"
    make_demo_model(model_dir)
    if args.mode != "launcher-direct":
        try:
            if args.mode == "cold-warm":
                cold_warm(model_dir, work, args.rounds)
            else:
                preload(model_dir, work, args.rounds, args.max_tokens)
        finally:
            shutil.rmtree(work, ignore_errors=True)  # compile caches and logs: nothing stays in /tmp
        return 0
    times: dict[str, list[float]] = {"launcher": [], "direct": []}
    tps_on: list[float] = []
    for round_no in range(args.rounds):
        order = ("launcher", "direct") if round_no % 2 == 0 else ("direct", "launcher")
        for kind in order:
            port = free_port()
            env = launcher_env(model_dir, port, work, enable=True)
            argv = launcher_argv() if kind == "launcher" else direct_argv(env)
            server = Server(argv, env, port, work / f"{kind}-{round_no}.log")
            try:
                seconds = server.wait_health()
                times[kind].append(seconds)
                if kind == "launcher":
                    tps_on.append(server.tokens_per_second(args.max_tokens))
            finally:
                server.stop()
            print(f"round {round_no} {kind:8s} start->ready {seconds:6.2f} s", flush=True)
    port = free_port()
    server = Server(launcher_argv(), launcher_env(model_dir, port, work, enable=False), port, work / "off.log")
    try:
        server.wait_health()
        tps_off = server.tokens_per_second(args.max_tokens)
    finally:
        server.stop()
    launcher, direct = statistics.median(times["launcher"]), statistics.median(times["direct"])
    print(f"median start->ready: launcher {launcher:.2f} s, direct vLLM {direct:.2f} s, ratio {launcher / direct:.3f}")
    print(
        f"greedy tokens/s (max_tokens {args.max_tokens}, {len(PROMPTS)} prompts): "
        f"n-gram on {statistics.median(tps_on):.1f}, off {tps_off:.1f}, ratio {statistics.median(tps_on) / tps_off:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
