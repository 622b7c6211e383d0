"""The GPU smoke workflow's CPU-runnable parts: scripts/gpu_smoke.py's checks against a server on loopback
that speaks the few endpoints they use (with vLLM's API-key rule: /v1 needs the key), the comparisons and
the warm-start log rules, and scripts/gpu_smoke.sh's argument handling."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "gpu_smoke.py"
KEY = "smoke-key-123"
sys.path.insert(0, str(SCRIPT.parent))
from gpu_smoke import PROMPTS, acceptance_length, enough_equal, warm_problems  # noqa: E402

METRICS = """# TYPE vllm:spec_decode_num_drafts counter
vllm:spec_decode_num_drafts_total{model_name="m"} 40
# TYPE vllm:spec_decode_num_draft_tokens counter
vllm:spec_decode_num_draft_tokens_total{model_name="m"} 120
# TYPE vllm:spec_decode_num_accepted_tokens counter
vllm:spec_decode_num_accepted_tokens_total{model_name="m"} 50
"""


class _Server:
    """/v1/health/ready, /v1/models, /v1/metrics and /v1/chat/completions; `enforce` is vLLM's --api-key rule."""

    def __init__(self, enforce: bool = True, ready: bool = True, metrics: str = METRICS) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def _send(self, code: int, body: bytes) -> None:
                self.send_response(code)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _route(self) -> None:
                if enforce and self.headers.get("Authorization") != f"Bearer {KEY}":
                    return self._send(401, b'{"error": "Unauthorized"}')
                if self.path == "/v1/health/ready":
                    return self._send(200 if ready else 503, b"")
                if self.path == "/v1/metrics":
                    return self._send(200, metrics.encode())
                if self.path == "/v1/models":
                    return self._send(200, b'{"data": [{"id": "m"}]}')
                if self.path == "/v1/chat/completions":
                    body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                    outer.prompts.append(body)
                    text = body["messages"][-1]["content"][::-1]
                    return self._send(200, json.dumps({"choices": [{"message": {"content": text}}]}).encode())
                return self._send(404, b"")

            do_GET = do_POST = _route

        self.prompts: list[dict] = []
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    made: list[_Server] = []

    def make(**kwargs) -> _Server:
        made.append(_Server(**kwargs))
        return made[-1]

    yield make
    for one in made:
        one.close()


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={"SMOKE_API_KEY": KEY, "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO / "src")},
    )


def test_ready_with_the_key_and_refused_without(server) -> None:
    up = server()
    done = _run("ready", up.url, "--api-key-env", "SMOKE_API_KEY", "--deadline", "10", "--interval", "0.1")
    assert done.returncode == 0, done.stderr
    assert "API key required and accepted" in done.stdout


def test_ready_fails_when_the_key_is_not_enforced(server) -> None:
    open_server = server(enforce=False)
    done = _run("ready", open_server.url, "--api-key-env", "SMOKE_API_KEY", "--deadline", "10", "--interval", "0.1")
    assert done.returncode == 4 and "without the API key, not 401" in done.stderr


def test_ready_gives_up_at_its_deadline(server) -> None:
    starting = server(ready=False)
    done = _run("ready", starting.url, "--api-key-env", "SMOKE_API_KEY", "--deadline", "0.5", "--interval", "0.1")
    assert done.returncode == 4 and "not ready within" in done.stderr and len(done.stderr.splitlines()) == 1


def test_greedy_sends_temperature_0_with_the_key_and_same_compares(server, tmp_path: Path) -> None:
    up = server()
    first, second, other = tmp_path / "on.json", tmp_path / "off.json", tmp_path / "other.json"
    for out in (first, second):
        assert _run("greedy", up.url, "m", str(out), "--api-key-env", "SMOKE_API_KEY").returncode == 0
    assert len(up.prompts) == 2 * len(PROMPTS) == 40
    assert all(body["temperature"] == 0 and body["model"] == "m" and body["max_tokens"] == 10 for body in up.prompts)
    assert _run("same", str(first), str(second)).returncode == 0
    outputs = json.loads(first.read_text())
    # 12 of 20 equal is int(0.6 x 20): not more than it, so it fails; 13 passes (vLLM's test_eagle_correctness)
    for equal, code in ((20, 0), (13, 0), (12, 4), (0, 4)):
        other.write_text(json.dumps(outputs[:equal] + ["something else"] * (len(outputs) - equal)))
        done = _run("same", str(first), str(other))
        assert done.returncode == code, (equal, done.stderr)
        assert f"{equal} of 20 greedy outputs" in (done.stdout if code == 0 else done.stderr), done
    other.write_text(json.dumps(outputs[:-1]))
    assert _run("same", str(first), str(other)).returncode == 4  # a missing output is a broken run


@pytest.mark.parametrize(
    "first, second, fraction, expected",
    [
        (["a"] * 5, ["a"] * 5, 0.6, (True, 5, 4)),
        (["a"] * 5, ["a"] * 3 + ["b"] * 2, 0.6, (False, 3, 4)),
        (["a"] * 10, ["a"] * 7 + ["b"] * 3, 0.6, (True, 7, 7)),
        (["a"] * 10, ["a"] * 10, 1.0, (False, 10, 11)),  # "more than" a fraction of 1.0 can never pass
        (["a"] * 10, ["a"] * 10, 0.99, (True, 10, 10)),  # the old rule: every output identical
        ([], [], 0.6, (False, 0, 1)),
        (["a"] * 3, ["a"] * 4, 0.6, (False, 3, 2)),
    ],
)
def test_enough_equal_counts_as_vllm_does(first, second, fraction, expected) -> None:
    assert enough_equal(first, second, fraction) == expected


@pytest.mark.parametrize("floor, code", [("2.0", 0), ("2.25", 0), ("2.3", 4)])
def test_acceptance_floor_on_a_real_scrape(server, floor: str, code: int) -> None:
    up = server()  # 50 accepted over 40 drafts: 2.25
    done = _run("acceptance", up.url, "--min", floor, "--api-key-env", "SMOKE_API_KEY")
    assert done.returncode == code, done.stderr
    assert acceptance_length(METRICS) == pytest.approx(2.25)


def test_no_drafts_is_below_any_floor(server) -> None:
    up = server(metrics="# TYPE vllm:generation_tokens counter\nvllm:generation_tokens_total 10\n")
    assert _run("acceptance", up.url, "--min", "1.0", "--api-key-env", "SMOKE_API_KEY").returncode == 4


GOOD_WARM = """INFO nim-specdec: compile cache: /opt/nim/.cache/compile/vllm-0.32.0-abc
INFO nim-specdec: exec: python3 -m nim_specdec.engines.vllm.boot.vllm_boot vllm serve /opt/nim/.cache/workspace/target
(EngineCore_DP0 pid=251) INFO 12-04 10:02:11 [backends.py:296] Directly load the compiled graph(s) for compile \
range (1, 8192) from the cache, took 2.104 s"""
AOT = "/opt/nim/.cache/compile/vllm/torch_compile_cache/torch_aot_compile/3f2a9c/rank_0_0/model"

# The lines each supported vLLM writes when a start loads its compiled model, as its logger formats them
# (vllm/logger.py: "(process pid=N) LEVEL date [file:line] message"), the line numbers those of the release:
# torch's AOT compile in vllm/compilation/decorators.py (_try_load_aot_compiled_fn), vLLM's piecewise graphs
# in vllm/compilation/backends.py (CompilerManager.compile).
WARM_LINES = {
    ("0.32", "decorators.py"): (
        "(EngineCore_DP0 pid=251) INFO 12-04 10:02:11 [decorators.py:319] Directly load AOT compilation from path "
        f"{AOT}"
    ),
    ("0.32", "backends.py"): (
        "(EngineCore_DP0 pid=251) INFO 12-04 10:02:11 [backends.py:296] Directly load the compiled graph(s) for "
        "compile range (1, 8192) from the cache, took 2.104 s"
    ),
    ("0.33", "decorators.py"): (
        "(EngineCore_DP0 pid=251) INFO 12-04 10:02:11 [decorators.py:327] Directly load AOT compilation from path "
        f"{AOT}"
    ),
    ("0.33", "backends.py"): (
        "(EngineCore_DP0 pid=251) INFO 12-04 10:02:11 [backends.py:311] Directly load the compiled graph(s) "
        "for compile range (1, 8192) from the cache, took 1.873 s"
    ),
    ("0.34", "decorators.py"): (
        "(EngineCore_DP0 pid=251) INFO 12-04 10:02:11 [decorators.py:327] [eagle_head] Directly load AOT "
        f"compilation from path {AOT}"
    ),
    ("0.34", "backends.py"): (
        "(EngineCore_DP0 pid=251) INFO 12-04 10:02:11 [backends.py:315] Directly load the compiled graph(s) for "
        "compile range (1, 8192) from the cache, took 1.912 s"
    ),
}
COLD_LINES = (  # a start that compiled: what monitor.py logs instead (0.32 to 0.34 alike)
    "(EngineCore_DP0 pid=251) INFO 12-04 10:02:11 [monitor.py:40] Starting torch.compile",
    "(EngineCore_DP0 pid=251) INFO 12-04 10:03:40 [monitor.py:62] torch.compile took 88.21 s in total",
)
WARM_BASE = GOOD_WARM.rsplit("\n", 1)[0]


@pytest.mark.parametrize("release, source", sorted(WARM_LINES))
def test_warm_start_evidence_of_each_supported_vllm(release: str, source: str) -> None:
    assert warm_problems(f"{WARM_BASE}\n{WARM_LINES[release, source]}") == []


def test_a_compiling_start_is_not_warm() -> None:
    assert warm_problems(WARM_BASE + "\n" + "\n".join(COLD_LINES)) == [
        "vLLM compiled again instead of loading its compiled graphs"
    ]


@pytest.mark.parametrize(
    "log, problem",
    [
        (GOOD_WARM, None),
        ("INFO nim-specdec: downloading hf://x: 5 files, 16 GB\n" + GOOD_WARM, "it downloaded"),
        (
            GOOD_WARM.replace("nim_specdec.engines.vllm.boot.vllm_boot ", ""),
            "vLLM's check did not run inside vllm_boot",
        ),
        (
            GOOD_WARM.replace(
                "compile cache: /opt/nim/.cache/compile/vllm-0.32.0-abc",
                "compile cache: /c is not writable (EROFS); using /tmp/x for this start",
            ),
            "the compile cache was not used in place",
        ),
        (
            GOOD_WARM.replace("Directly load the compiled graph(s)", "Compiling a graph"),
            "vLLM compiled again instead of loading its compiled graphs",
        ),
    ],
)
def test_warm_start_rules(log: str, problem: str | None, tmp_path: Path) -> None:
    problems = warm_problems(log)
    assert problems == ([problem] if problem else [])
    path = tmp_path / "warm.log"
    path.write_text(log)
    assert _run("warm", str(path)).returncode == (4 if problem else 0)


def test_shell_script_usage_is_exit_2(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "IMAGE": "x", "CACHE_DIR": str(tmp_path / "c"), "REPORTS": str(tmp_path / "r")}
    script = str(REPO / "scripts" / "gpu_smoke.sh")
    for args in ([], ["bogus"], ["stop"]):
        done = subprocess.run(["bash", script, *args], env=env, capture_output=True, text=True, timeout=30)
        assert done.returncode == 2 and "usage:" in done.stderr, args


FAKE_DOCKER = """#!/bin/sh
# Records each docker call; `run --rm ... plan` prints a plan's argv, the rest succeed silently.
printf '%s\\n' "$*" >>"$DOCKER_CALLS"
case "$*" in
  *" plan"*) echo '{"argv": ["vllm", "serve", "/w/t", "--served-model-name", "m"]}' ;;
esac
exit 0
"""


def test_spec_on_checks_the_host_port_from_here_and_the_servers_own_port_inside(server, tmp_path: Path) -> None:
    """The host's PORT is where the container's 8000 is published: the checks run here use it, the check run
    inside the container (docker exec) uses 8000. Docker itself is a recorder here (no engine on CPU runners)."""
    up = server()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text(FAKE_DOCKER)
    (bin_dir / "docker").chmod(0o755)
    port = up.url.rsplit(":", 1)[1]
    calls = tmp_path / "calls"
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "IMAGE": "img",
        "CACHE_DIR": str(tmp_path / "c"),
        "REPORTS": str(tmp_path / "r"),
        "PORT": port,
        "SMOKE_API_KEY": KEY,
        "DOCKER_CALLS": str(calls),
        "PYTHONPATH": str(REPO / "src"),
    }
    script = str(REPO / "scripts" / "gpu_smoke.sh")
    done = subprocess.run(["bash", script, "spec-on"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    recorded = calls.read_text().splitlines()
    run = next(line for line in recorded if line.startswith("run -d"))
    assert f"-p {port}:8000" in run and "NIM_SPECDEC_ENABLE=1" in run
    # As the manifests run it: a read-only root, an arbitrary UID of group 0 (not the image's 1000), tmpfs
    # where the pod has emptyDirs, and the cache given to that UID first, as root, from a container.
    assert "--read-only" in run.split() and "--user 1000650000:0" in run and "--cap-drop ALL" in run
    assert all(f"--tmpfs {path}:rw,exec," in run for path in ("/opt/nim", "/opt/nim/scratch", "/tmp"))
    assert "NIM_WORKSPACE=/opt/nim/scratch/workspace" in run
    own = recorded.index(next(line for line in recorded if "chown" in line))
    assert "--user 0:0" in recorded[own] and own < recorded.index(run)
    exec_call = next(line for line in recorded if line.startswith("exec "))
    assert "acceptance http://127.0.0.1:8000 " in exec_call and f":{port}" not in exec_call
    assert len(up.prompts) == len(PROMPTS)  # the greedy prompts reached the published port
    assert json.loads((tmp_path / "r" / "nim-smoke-on.json").read_text())[0] == PROMPTS[0][::-1]


def test_an_arbitrary_uid_that_is_not_a_number_is_refused(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "IMAGE": "x", "CACHE_DIR": str(tmp_path / "c"), "REPORTS": str(tmp_path / "r")}
    script = str(REPO / "scripts" / "gpu_smoke.sh")
    for uid in ("0", "root", "1000;id", ""):
        done = subprocess.run(
            ["bash", script, "spec-on"], env=env | {"SMOKE_UID": uid}, capture_output=True, text=True, timeout=30
        )
        if uid == "":  # empty is unset: the default UID, and then docker, which this PATH lacks
            assert "SMOKE_UID" not in done.stderr
            continue
        assert done.returncode == 2 and f"SMOKE_UID={uid} is not a UID" in done.stderr, uid


def test_the_workflow_gates_pull_requests_on_a_gpu_runner() -> None:
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "gpu-smoke.yml").read_text())
    triggers = workflow[True]  # YAML 1.1 reads the key `on` as True
    assert triggers["pull_request"]["branches"] == ["main"]
    assert triggers["pull_request"]["paths"] == triggers["push"]["paths"]
    job = workflow["jobs"]["smoke"]
    assert "gpu" in job["runs-on"] and "self-hosted" in job["runs-on"]
    assert "head.repo.full_name == github.repository" in job["if"]  # no fork's code on the GPU runner
    assert any("gpu_smoke.sh clean" in step.get("run", "") for step in job["steps"])


def test_clean_removes_the_cache_as_root_from_a_container(tmp_path: Path) -> None:
    """The cache's files belong to the server's UID: the runner removes them through the image as root, then
    the emptied folder itself (its parent is the runner's)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text(FAKE_DOCKER)
    (bin_dir / "docker").chmod(0o755)
    calls, cache = tmp_path / "calls", tmp_path / "c"
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "IMAGE": "img",
        "CACHE_DIR": str(cache),
        "REPORTS": str(tmp_path / "r"),
        "DOCKER_CALLS": str(calls),
    }
    done = subprocess.run(
        ["bash", str(REPO / "scripts" / "gpu_smoke.sh"), "clean"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    (call,) = calls.read_text().splitlines()
    assert call.startswith("run --rm --user 0:0 ") and f"-v {cache}:/c img" in call and "rm -rf /c/*" in call
    assert not cache.exists()
