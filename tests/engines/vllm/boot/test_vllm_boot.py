"""vllm_boot: how serve's exec runs vLLM's command after the check, and what the launcher hands it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nim_specdec.engines.protocol.sections import NOT_CHECKED, VllmCheckResult
from nim_specdec.engines.vllm.boot.vllm_boot import CONTEXT_VAR, MODULE, boot_argv, check_context, server_entry
from nim_specdec.engines.vllm.check.gate import DEFERRED, run_check, settled
from nim_specdec.engines.vllm.check.request import CheckRequest, ModelFiles

SERVER = "vllm.entrypoints.openai.api_server"


@pytest.mark.parametrize(
    "program, expected",
    [
        (
            ["/venv/bin/python3", "-m", SERVER, "--model", "/ws/target"],
            ("module", SERVER, [SERVER, "--model", "/ws/target"]),
        ),
        (
            ["vllm", "serve", "/ws/target", "--port", "8000"],
            ("script", "vllm", ["vllm", "serve", "/ws/target", "--port", "8000"]),
        ),
        (["/usr/local/bin/vllm", "serve", "m"], ("script", "vllm", ["/usr/local/bin/vllm", "serve", "m"])),
    ],
)
def test_server_entry(program, expected):
    assert server_entry(program) == expected


def test_server_entry_refuses_an_empty_command():
    with pytest.raises(ValueError):
        server_entry([])


def test_boot_argv_keeps_vllms_command_whole():
    program = ["/venv/bin/python3", "-m", SERVER, "--model", "m"]
    assert boot_argv("/venv/bin/python3", program) == ["/venv/bin/python3", "-m", MODULE, *program]


def test_check_context_names_sources_never_values():
    request = CheckRequest(
        argv=("vllm", "--api-key", "s3cr3t"),
        target=ModelFiles("/ws/target", "/cache/t", "hf://org/secret-ish"),
        spec_origin={"num_speculative_tokens": "NIM_SPECDEC_ARGS"},
        engine_origin={"api_key": "cli"},
        vllm_version="0.33.0",
    )
    context = json.loads(check_context(request, "DEBUG", True))
    assert context == {
        "spec_origin": {"num_speculative_tokens": "NIM_SPECDEC_ARGS"},
        "engine_origin": {"api_key": "cli"},
        "vllm_version": "0.33.0",
        "log_level": "DEBUG",
        "jsonl_logging": True,
    }
    assert "s3cr3t" not in check_context(request, "INFO", False)


def defer_check(request):
    return run_check(request, [], warn=lambda _line: None, defer=True)


def test_defer_check_waits_for_files_that_are_not_here(tmp_path):
    here = CheckRequest(("python", "-m", SERVER), target=ModelFiles(str(tmp_path)))
    assert defer_check(here) == DEFERRED and settled(defer_check(here))
    away = CheckRequest(("python", "-m", SERVER), target=ModelFiles(str(tmp_path / "not-yet")))
    outcome = defer_check(away)
    assert outcome.ran is False and "not on this machine yet" in outcome.skipped and not settled(outcome)


@pytest.mark.parametrize(
    "check, expected",
    [
        (None, False),
        (VllmCheckResult(ran=False, skipped="why"), False),
        (VllmCheckResult(ran=True), True),
        (DEFERRED, True),
        (VllmCheckResult(ran=False, skipped="no device", status=NOT_CHECKED), True),
    ],
)
def test_settled(check, expected):
    assert settled(check) is expected


def test_without_a_context_the_program_runs_at_once_with_its_own_argv(tmp_path):
    # A module stands in for vLLM's server: it prints what it was run with and whether the context leaked.
    (tmp_path / "fake_server.py").write_text(
        "import os, sys\nprint(__name__, sys.argv[1:], os.environ.get('%s'))\nsys.exit(7)\n" % CONTEXT_VAR
    )
    done = subprocess.run(
        [sys.executable, "-m", MODULE, sys.executable, "-m", "fake_server", "--port", "1"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{Path(__file__).resolve().parents[4] / 'src'}:{tmp_path}"},
    )
    assert done.returncode == 7, done.stderr
    assert done.stdout.strip() == "__main__ ['--port', '1'] None"


@pytest.mark.parametrize(
    "engine_errored, ranks, expected_code",
    [
        (True, ["--nnodes", "2", "--node-rank", "0"], 4),  # the group lost a rank: one line, exit 4
        (False, ["--nnodes", "2", "--node-rank", "0"], 0),  # a clean stop
        (True, [], 0),  # one node: vLLM's own exit
    ],
)
def test_a_multinode_leader_whose_engine_died_exits_4(tmp_path, engine_errored, ranks, expected_code):
    # The fake server is what vLLM's is after its engine died: the middleware noted it, the server returned.
    (tmp_path / "fake_dead_server.py").write_text(
        "from types import SimpleNamespace\n"
        "from nim_specdec.processes import engine_death\n"
        f"engine_death.note(SimpleNamespace(errored={engine_errored}))\n"
    )
    src = Path(__file__).resolve().parents[4] / "src"
    done = subprocess.run(
        [sys.executable, "-m", MODULE, sys.executable, "-m", "fake_dead_server", "--master-addr", "lead", *ranks],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{src}:{tmp_path}"},
    )
    assert done.returncode == expected_code, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("nim-specdec: error:")]
    assert len(errors) == (1 if expected_code else 0), done.stderr
