"""The one way the tests start vLLM: `nim-specdec serve` through nim_specdec_lab.server_process.

A *run* is a session fixture: start a server, drive the fixed workload (vllm_workload.exercise), run the
probes other test folders registered for that run, stop it with SIGTERM and keep the record. The
server never outlives its fixture, so at most one vLLM server runs at a time, and every test that only
reads from a server shares one start (each start costs a minute or more on a small machine).

A probe is registered at import time by the module that asserts on its result:

    @probe("ngram")
    def bench_on(server, record, workdir): ...      # -> record.probe("bench_on") in the test

Modules that were not collected register nothing, so a run does only the work its tests need. A probe
that fails is kept as its error: the tests that read it fail, the run's other tests do not.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

import pytest

from nim_specdec.errors import ServerStartError
from nim_specdec_lab.server_process import RunningServer, ServerSpec, start_server
from vllm_workload import RunRecord, StopRecord, exercise

REPO = Path(__file__).resolve().parents[1]
READY_TIMEOUT_S = float(os.environ.get("E2E_READY_DEADLINE_S", "420"))
# Above the launcher's default shutdown timeout (60 s): once in about 40 stops here vLLM's engine process logged no
# SIGTERM and vLLM's own process manager killed it at that timeout; the exit code is then still vLLM's to give.
STOP_TIMEOUT_S = 90.0
SERVED_NAME = "demo"
MAX_MODEL_LEN = 384
# Every shared server gets these, so that token ids recorded on one predict the counters of another.
# --enforce-eager: no torch.compile at start, which halves a start on 2 cores (ready in 48 s instead of
# 90 s for the demo model); tokens come about 1.5x slower, the same for every server, and no test here
# measures absolute speed.
SERVER_ARGS = ("--max-model-len", str(MAX_MODEL_LEN), "--max-num-seqs", "4", "--seed", "0", "--enforce-eager")
GUIDE_NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 1}
GUIDE_NGRAM_ARGS = json.dumps({"speculative_config": json.dumps(GUIDE_NGRAM)})


@dataclass(frozen=True)
class Probe:
    run: str
    name: str
    fn: Callable[[RunningServer, RunRecord, Path], Any]
    before_workload: bool  # traffic-sensitive probes see the server before anything else was sent
    env: Callable[[Path], Mapping[str, str]] | None  # what the probe needs in the server's environment


PROBES: list[Probe] = []


def probe(run: str, before_workload: bool = False, env: Callable[[Path], Mapping[str, str]] | None = None):
    def register(fn):
        PROBES.append(Probe(run, fn.__name__, fn, before_workload, env))
        return fn

    return register


# run -> a probe that stops the server itself: fn(server, record, workdir, stop) calls stop() (SIGTERM and the
# wait for the exit, as a plain stop does) at the moment it needs, and returns what it saw meanwhile.
STOP_PROBES: dict[str, Probe] = {}


def stop_probe(run: str):
    def register(fn):
        assert run not in STOP_PROBES, f"one stop probe per run: {run} has {STOP_PROBES[run].name}"
        STOP_PROBES[run] = Probe(run, fn.__name__, fn, False, None)
        return fn

    return register


@dataclass(frozen=True)
class ProbeFailed:
    message: str


def aiperf_bin() -> str:
    # AIPerf lives in its own virtualenv (`make aiperf-venv`); AIPERF_BIN points elsewhere.
    path = Path(os.environ.get("AIPERF_BIN") or REPO / ".venv-aiperf" / "bin" / "aiperf")
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(
            f"aiperf not found at {path}: run `make aiperf-venv` or set AIPERF_BIN to an aiperf 0.13.0 executable"
        )
    return str(path)


def base_env(workdir: Path, demo_model: Path) -> dict[str, str]:
    """A server's environment: its own download cache and workspace, and the session's one vLLM cache.

    Every server of the session shares VLLM_CACHE_ROOT (a variable the user sets is left alone by the
    launcher): vLLM inspects the model's class in a subprocess at start (about 10 s on 2 cores) unless
    its model-info cache, keyed by vLLM's own module hashes, already holds it. With --enforce-eager
    nothing compiled goes there, so no server reads another's artefacts."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NIM_")}
    env.update(
        HF_HUB_OFFLINE="1",
        VLLM_CPU_KVCACHE_SPACE="1",
        VLLM_CACHE_ROOT=str(demo_model.parent / "vllm-cache"),
        NIM_CACHE_PATH=str(workdir / "cache"),
        NIM_WORKSPACE=str(workdir / "workspace"),
    )
    return env


def _spec(name: str, env: Mapping[str, str], args, workdir: Path) -> ServerSpec:
    # /v1/health/ready is the launcher's endpoint: it answers 503 until the model does.
    return ServerSpec(
        env=dict(env),
        args=tuple(args),
        ready_timeout_s=READY_TIMEOUT_S,
        log_path=workdir / f"{name}.log",
        ready_path="/v1/health/ready",
    )


def _start(name: str, spec: ServerSpec) -> RunningServer:
    try:
        return start_server(spec)
    except ServerStartError as err:
        tail = spec.log_path.read_text(errors="replace")[-5000:] if spec.log_path and spec.log_path.exists() else ""
        pytest.fail(f"[{name}] {err.one_line()}\n--- server log (tail) ---\n{tail}", pytrace=False)


@contextmanager
def serving(name: str, env: Mapping[str, str], args, workdir: Path) -> Iterator[RunningServer]:
    """A live server for tests that talk to it themselves; stopped on the way out, whatever happened."""
    server = _start(name, _spec(name, env, args, workdir))
    try:
        yield server
    finally:
        assert server.stop(STOP_TIMEOUT_S) == 0, f"[{name}] exit code after SIGTERM\n{server.log_text()[-3000:]}"


def _run_probe(item: Probe, server: RunningServer, record: RunRecord, workdir: Path) -> None:
    try:
        record.probes[item.name] = item.fn(server, record, workdir)
    except (Exception, pytest.fail.Exception) as err:  # noqa: BLE001 - kept for the tests that read it
        record.probes[item.name] = ProbeFailed(f"{type(err).__name__}: {err}")


def launch(
    name: str, env: Mapping[str, str], args, workdir: Path, smoke: bool | None = None, api_key: str | None = None
) -> RunRecord:
    """Start, run the workload and the registered probes, stop; the server never outlives this call. A server
    given --api-key gets its workload with `api_key`; its probes know their own keys."""
    mine = [p for p in PROBES if p.run == name]
    env = dict(env)
    for item in mine:
        if item.env is not None:
            env.update(item.env(workdir))
    record = RunRecord(
        name=name, env={k: v for k, v in env.items() if k.startswith(("NIM_", "VLLM_"))}, args=list(args)
    )
    server = _start(name, _spec(name, env, args, workdir))
    try:
        record.ready_statuses, record.ready_seconds = list(server.ready_statuses), server.ready_seconds
        for item in (p for p in mine if p.before_workload):
            _run_probe(item, server, record, workdir)
        try:
            exercise(server.url, record, workdir, smoke_expect_spec=smoke, api_key=api_key)
        except AssertionError as err:
            raise AssertionError(f"[{name}] {err}" + record.context()) from None
        for item in (p for p in mine if not p.before_workload):
            _run_probe(item, server, record, workdir)
        before = server.cmdline()
        stopper = STOP_PROBES.get(name)
        if stopper is None:
            code = server.stop(STOP_TIMEOUT_S)
        else:
            codes: list[int] = []
            try:
                record.probes[stopper.name] = stopper.fn(
                    server, record, workdir, lambda: codes.append(server.stop(STOP_TIMEOUT_S)) or codes[-1]
                )
            except (Exception, pytest.fail.Exception) as err:  # noqa: BLE001 - kept for the tests that read it
                record.probes[stopper.name] = ProbeFailed(f"{type(err).__name__}: {err}")
            code = codes[-1] if codes else server.stop(STOP_TIMEOUT_S)
        record.stop = StopRecord(server.pid, before, code, server.stop_seconds, server.group_gone, server.killed)
    finally:
        server.stop(10)
        record.log = server.log_text()
    return record


def demo_env(demo_model: Path, workdir: Path, **changes: str) -> dict[str, str]:
    env = base_env(workdir, demo_model)
    env.update(NIM_MODEL_PATH=str(demo_model / "target"), NIM_SERVED_MODEL_NAME=SERVED_NAME, **changes)
    return env


def make_demo_model(directory: Path) -> Path:
    # A child process: torch and transformers stay out of the test process.
    subprocess.run(
        [sys.executable, "-m", "nim_specdec", "demo-model", str(directory)],
        check=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        timeout=600,
        capture_output=True,
    )
    return directory


@pytest.fixture(scope="session")
def demo_model(tmp_path_factory) -> Path:
    """The project's demo model (target, draft-copy, draft-other, draft-eagle3): the one tiny model of the tests."""
    return make_demo_model(tmp_path_factory.mktemp("demo-model"))


@pytest.fixture(scope="session")
def runs_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("runs")


@pytest.fixture(scope="session")
def off_run(demo_model, runs_dir) -> RunRecord:
    """NIM_SPECDEC_ENABLE=0: the target alone."""
    env = demo_env(demo_model, runs_dir / "off", NIM_SPECDEC_ENABLE="0")
    return launch("off", env, SERVER_ARGS, runs_dir, smoke=False)


@pytest.fixture(scope="session")
def ngram_run(demo_model, runs_dir) -> RunRecord:
    """The guide's n-gram override. NIM_DRAFT_MODEL_PATH names a draft too, so without the override the
    model-free auto choice would be draft_model: the run shows NIM_SPECDEC_ARGS switching the method."""
    env = demo_env(
        demo_model,
        runs_dir / "ngram",
        NIM_SPECDEC_ENABLE="1",
        NIM_SPECDEC_ARGS=GUIDE_NGRAM_ARGS,
        NIM_DRAFT_MODEL_PATH=str(demo_model / "draft-other"),
    )
    return launch("ngram", env, SERVER_ARGS, runs_dir, smoke=True)


EAGLE3_CONFIG = {"method": "eagle3", "model": "eagle3_draft", "num_speculative_tokens": 3}


@pytest.fixture(scope="session")
def eagle3_run(demo_model, runs_dir) -> RunRecord:
    """The guide's EAGLE3 example, with the demo's random EAGLE3 draft as a local directory."""
    env = demo_env(demo_model, runs_dir / "eagle3", NIM_DRAFT_MODEL_PATH=str(demo_model / "draft-eagle3"))
    return launch("eagle3", env, [*SERVER_ARGS, "--speculative-config", json.dumps(EAGLE3_CONFIG)], runs_dir)
