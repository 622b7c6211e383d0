"""ARCTIC_INFERENCE_ENABLED=1 is refused with one line (exit 2) before anything is downloaded or started:
arctic-inference's vLLM plugin, which that value turns on, makes every start of this vLLM fail."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from core_fixtures import facts
from nim_specdec.errors import ConfigError
from nim_specdec.launch.resolve import plan_for


@pytest.mark.parametrize("value, refused", [("1", True), ("0", False), ("", False), ("true", False)])
def test_only_the_value_the_plugin_reads_is_refused(models, value, refused):
    env = {"NIM_CACHE_PATH": str(models["cache"]), "NIM_MODEL_PATH": str(models["target"])}
    env["ARCTIC_INFERENCE_ENABLED"] = value
    if not refused:
        plan_for(env, [], facts())
        return
    with pytest.raises(ConfigError) as err:
        plan_for(env, [], facts())
    line = err.value.one_line()
    assert line.startswith("ARCTIC_INFERENCE_ENABLED: value '1' turns on arctic-inference's vLLM plugin")
    assert "unset it" in line and "\n" not in line


def test_plan_exits_2_with_one_line(models):
    env = {**os.environ, "NIM_CACHE_PATH": str(models["cache"]), "NIM_MODEL_PATH": str(models["target"])}
    done = subprocess.run(
        [sys.executable, "-m", "nim_specdec", "plan"],
        env={**env, "ARCTIC_INFERENCE_ENABLED": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "ARCTIC_INFERENCE_ENABLED" in done.stderr


def test_the_installed_vllm_does_fail_with_the_plugin_on():
    """Why it is refused: vLLM loads the plugin at start and does not catch what it raises."""
    code = "from vllm.plugins import load_general_plugins; load_general_plugins()"
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "ARCTIC_INFERENCE_ENABLED": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode != 0 and "RuntimeError: Arctic Inference" in done.stderr, done.stderr[-2000:]
