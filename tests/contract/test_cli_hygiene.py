"""The CLI behaves like a Unix tool: help for every subcommand, and a quiet end on a closed pipe."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"


def cli_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NIM_")}
    env["PYTHONPATH"] = str(SRC)
    env.update(extra)
    return env


@pytest.mark.parametrize("command", ["plan", "serve", "prepare"])
@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_of_passthrough_subcommands(command, flag):
    """No model is configured: the help must come before anything looks for one."""
    proc = subprocess.run(
        [sys.executable, "-m", "nim_specdec", command, flag], env=cli_env(), capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"usage: nim-specdec {command}")
    assert "NIM_MODEL_PATH" in proc.stdout and "vllm serve --help" in proc.stdout
    assert proc.stderr == ""


def test_closed_pipe_ends_quietly(models):
    env = cli_env(NIM_MODEL_PATH=str(models["target"]), NIM_CACHE_PATH=str(models["cache"]))
    proc = subprocess.Popen(
        [sys.executable, "-m", "nim_specdec", "plan"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    proc.stdout.close()  # the reader is gone before the plan is written, as with `plan | head -0`
    _, err = proc.communicate(timeout=60)
    assert err.decode() == ""
    assert proc.returncode == 141
