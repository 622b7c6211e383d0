"""Every file the lab reads is a regular file inside the folder it belongs to, read with a size cap and parsed
without unbounded recursion: `bench --report-only` on a FIFO, a deeply nested file, an endless file or a link
to a secret ends in one line (exit 2) at once. Usage errors are one line; SIGTERM says what it stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

SECRET = "hf_SeCrEtToKeN0123456789abcdefXYZ"


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _nested(path: Path) -> None:
    path.write_text("[" * 200_000 + "]" * 200_000)


def _endless(path: Path) -> None:
    with open(path, "wb") as fh:  # sparse: a size past the cap without writing it
        fh.truncate(100 * 1024 * 1024)


def _link_to_secret(path: Path) -> None:
    secret = path.parents[4] / "token"
    secret.write_text(SECRET)
    path.symlink_to(secret)


def _not_a_measurement(path: Path) -> None:
    path.write_text('{"requests": "' + SECRET + '"}')


CASES = {
    "fifo": (_fifo, "is a FIFO, not a regular file"),
    "nested": (_nested, "nested more than 64 levels"),
    "endless": (_endless, "is larger than 64 MiB"),
    "link": (_link_to_secret, "a link to a file outside its folder"),
    "wrong shape": (_not_a_measurement, "is not a bench measurement"),
}


def _run(argv: list[str], timeout: float = 60) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NIM_")}
    return subprocess.run(
        [sys.executable, "-m", "nim_specdec", *argv], capture_output=True, text=True, timeout=timeout, env=env
    )


@pytest.mark.parametrize("case", CASES)
def test_report_only_on_a_hostile_measurement_is_one_line_at_once(tmp_path, case):
    make, fragment = CASES[case]
    out = tmp_path / "w" / "out"
    run = out / "runs" / "on" / "chat"
    run.mkdir(parents=True)
    make(run / "measurement.json")
    done = _run(["bench", "--report-only", "--out", str(out)])  # a FIFO read would block: the timeout fails it
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert fragment in done.stderr and "measurement.json" in done.stderr, done.stderr
    assert SECRET[:8] not in done.stderr + done.stdout and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "argv,fragment",
    [
        (["bench", "--concurrency"], "nim-specdec bench: error: argument --concurrency: expected one argument"),
        (["tune", "--no-such-flag"], "unrecognized arguments: --no-such-flag"),
        (["report", "--since"], "nim-specdec report: error: argument --since"),
        (["no-such-command"], "nim-specdec: error: argument COMMAND: invalid choice"),
    ],
)
def test_a_usage_error_is_one_line_naming_the_help(argv, fragment):
    done = _run(argv)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert fragment in done.stderr and "--help" in done.stderr, done.stderr


def test_sigterm_in_a_command_that_downloads_nothing_says_what_it_stopped(tmp_path):
    """SIGTERM during `bench` stops bench: nothing was being downloaded, and the line does not say so."""
    script = (
        "import os, signal, sys, threading\n"
        "import importlib\nm = importlib.import_module('nim_specdec.cli.main')\n"
        "from nim_specdec_lab.cli import cmd_bench\n"
        "def run(args):\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    threading.Event().wait(30)\n"
        "cmd_bench.run = run\n"
        "sys.exit(m.main(['bench', '--report-only', '--out', sys.argv[1]]))\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 128 + signal.SIGTERM, done.stderr
    assert done.stderr.strip() == "nim-specdec bench: stopped by SIGTERM", done.stderr


def test_the_lab_honours_nim_strict_variables(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("NIM_")}
    argv = [sys.executable, "-m", "nim_specdec", "bench", "--report-only", "--out", str(tmp_path)]
    strict = {**env, "NIM_STRICT_VARIABLES": "1", "NIM_SPECDEC_ENABLED": "1"}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=strict)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "NIM_STRICT_VARIABLES: NIM_SPECDEC_ENABLED is not a variable" in done.stderr
    assert "did you mean NIM_SPECDEC_ENABLE?" in done.stderr
    lenient = subprocess.run(
        argv, capture_output=True, text=True, timeout=60, env={**strict, "NIM_STRICT_VARIABLES": "0"}
    )
    assert lenient.returncode == 2 and "no finished runs" in lenient.stderr, lenient.stderr  # went on to the command


def test_a_builtin_config_dir_that_does_not_exist_is_refused(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("NIM_")}
    env.update(NIM_BUILTIN_CONFIG_DIR=str(tmp_path / "typo"), NIM_MODEL_NAME="x", NIM_CACHE_PATH=str(tmp_path / "c"))
    done = subprocess.run(
        [sys.executable, "-m", "nim_specdec", "plan"], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "NIM_BUILTIN_CONFIG_DIR" in done.stderr and "is not an existing folder" in done.stderr


@pytest.mark.parametrize(
    "context",
    ['["not", "an", "object"]', '{"timestamps_ms": {}, "requests": {}}', "[" * 5000 + "]" * 5000],
)
def test_report_only_on_a_broken_serve_context_is_one_line(tmp_path, context):
    out = tmp_path / "out"
    (out / "serve").mkdir(parents=True)
    (out / "serve" / "bench_serve.json").write_text(context)
    done = _run(["bench", "--report-only", "--out", str(out)])
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "bench_serve.json" in done.stderr and "Traceback" not in done.stderr, done.stderr
