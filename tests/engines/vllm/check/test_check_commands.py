"""`plan --check-vllm` and `serve` run vLLM's own validation before anything slow: one line, exit 2,
naming where the key came from and quoting vLLM's reason; `plan` alone stays on the fast path."""

from __future__ import annotations

import json
import os
import subprocess
import sys

DRAFT_TOO_LONG = {"method": "draft_model", "num_speculative_tokens": 2, "max_model_len": 100000}


def _run(command: str, agree_models, tmp_path, spec: dict, *extra: str) -> subprocess.CompletedProcess:
    spec = {**spec, "model": str(agree_models["draft-other"])}
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("NIM_")},
        "HF_HUB_OFFLINE": "1",
        "NIM_MODEL_PATH": str(agree_models["target"]),
        "NIM_CACHE_PATH": str(tmp_path / "cache"),
    }
    args = [sys.executable, "-m", "nim_specdec", command, *extra, "--speculative-config", json.dumps(spec)]
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)


def test_plan_without_the_flag_stays_on_the_fast_path(agree_models, tmp_path):
    done = _run("plan", agree_models, tmp_path, DRAFT_TOO_LONG)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["vllm_check"] is None  # the check did not run


def test_plan_check_vllm_refuses_with_origin_and_vllms_reason(agree_models, tmp_path):
    done = _run("plan", agree_models, tmp_path, DRAFT_TOO_LONG, "--check-vllm")
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("nim-specdec: error:")]
    assert len(errors) == 1 and "Traceback" not in done.stderr
    assert "speculative_config.max_model_len (from cli)" in errors[0]
    assert "cannot be larger than" in errors[0] or "greater than" in errors[0]


def test_plan_check_vllm_accepts_and_times_the_check(agree_models, tmp_path):
    done = _run("plan", agree_models, tmp_path, {"method": "draft_model", "num_speculative_tokens": 2}, "--check-vllm")
    assert done.returncode == 0, done.stderr
    check = json.loads(done.stdout)["vllm_check"]
    assert check["ran"] is True and check["seconds"] > 0


def test_serve_refuses_before_starting_vllm(agree_models, tmp_path):
    # serve execs vllm_boot, which runs the check in the Python that would then run vLLM's server: the
    # refusal comes from there (the exec line proves it), before vLLM has started anything.
    done = _run("serve", agree_models, tmp_path, DRAFT_TOO_LONG)
    assert done.returncode == 2, done.stderr
    exec_lines = [line for line in done.stderr.splitlines() if "nim-specdec: exec:" in line]
    assert len(exec_lines) == 1 and " -m nim_specdec.engines.vllm.boot.vllm_boot " in exec_lines[0], done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("nim-specdec: error:")]
    assert len(errors) == 1 and "refuses this configuration" in errors[0], done.stderr
    assert "speculative_config.max_model_len (from cli)" in errors[0]
    assert "Traceback" not in done.stderr and "Starting vLLM server" not in done.stderr
    assert "NIM_VLLM_CHECK_CONTEXT" not in done.stderr
