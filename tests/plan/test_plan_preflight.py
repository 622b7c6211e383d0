"""`plan` and `serve` stop in milliseconds on a draft that cannot fit its target."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).parents[1] / "data" / "model_configs"
EAGLE3 = '{"method": "eagle3", "model": "eagle3_draft", "num_speculative_tokens": 3}'


def _run(command: str, target: str, draft: str, tmp_path: Path, **extra: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "NIM_CACHE_PATH": str(tmp_path / "cache"),
        "NIM_MODEL_PATH": str(DATA / target),
        "NIM_DRAFT_MODEL_PATH": str(DATA / draft),
        **extra,
    }
    return subprocess.run(
        [sys.executable, "-m", "nim_specdec", command, "--speculative-config", EAGLE3],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_mismatched_eagle3_draft_is_refused_before_anything_starts(tmp_path):
    for command in ("plan", "serve"):
        proc = _run(command, "meta-llama--Llama-3.3-70B-Instruct", "yuhuili--EAGLE3-LLaMA3.1-Instruct-8B", tmp_path)
        assert proc.returncode == 2, proc.stderr
        errors = [line for line in proc.stderr.splitlines() if line.startswith("nim-specdec: error:")]
        assert len(errors) == 1 and "hidden" in errors[0] and "8192" in errors[0] and "4096" in errors[0], errors
        assert not (tmp_path / "cache" / "workspace").exists()  # refused before anything was linked


def test_matching_pair_plans_with_a_preflight_section(tmp_path):
    proc = _run("plan", "meta-llama--Llama-3.1-8B-Instruct", "yuhuili--EAGLE3-LLaMA3.1-Instruct-8B", tmp_path)
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    results = {check["name"]: check["result"] for check in plan["preflight"]["checks"]}
    assert results and "fail" not in results.values()


def test_preflight_off_lets_the_mismatch_through(tmp_path):
    proc = _run(
        "plan",
        "meta-llama--Llama-3.3-70B-Instruct",
        "yuhuili--EAGLE3-LLaMA3.1-Instruct-8B",
        tmp_path,
        NIM_SPECDEC_PREFLIGHT="off",
    )
    assert proc.returncode == 0, proc.stderr
