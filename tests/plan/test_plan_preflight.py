"""`plan` and `serve` stop in milliseconds on a draft that cannot fit its target."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).parents[1] / "data" / "model_configs"
EAGLE3 = '{"method": "eagle3", "model": "eagle3_draft", "num_speculative_tokens": 3}'
# Both of vLLM's runners read the top-level key first, so a draft naming its layers there and under eagle_config
# plans alike on either.
TOP_LEVEL = "eagle_aux_hidden_state_layer_ids"


def _run(command: str, target: str, draft: str, tmp_path: Path, **extra: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "NIM_CACHE_PATH": str(tmp_path / "cache"),
        "NIM_MODEL_PATH": str(DATA / target),  # an absolute path given stays as it is
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


def _model(root: Path, name: str, changes: dict) -> str:
    """A copy of a test-data config.json with `changes`, in a directory of its own."""
    out = root / name.split("--")[-1]
    out.mkdir(parents=True)
    (out / "config.json").write_text(json.dumps({**json.loads((DATA / name / "config.json").read_text()), **changes}))
    return str(out)


def test_an_eagle3_draft_reading_layers_the_target_lacks_is_refused(tmp_path):
    """The draft names no auxiliary layers, so vLLM would take its default (2, L//2, L-3) = (2, 1, -1) on a 2-layer
    target and fail with a shape error at the first request; the plan refuses it with the layer count and the fix."""
    target = _model(tmp_path / "models", "meta-llama--Llama-3.1-8B-Instruct", {"num_hidden_layers": 2})
    proc = _run("plan", target, "yuhuili--EAGLE3-LLaMA3.1-Instruct-8B", tmp_path)
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("nim-specdec: error:")]
    assert len(errors) == 1, proc.stderr
    assert "EAGLE3-LLaMA3.1-Instruct-8B" in errors[0] and "auxiliary layers [2, 1, -1]" in errors[0], errors
    assert "2-layer target: layer -1 does not exist" in errors[0] and "(distinct integers in [0, 2])" in errors[0]


def test_the_same_draft_naming_layers_the_target_has_plans(tmp_path):
    target = _model(tmp_path / "models", "meta-llama--Llama-3.1-8B-Instruct", {"num_hidden_layers": 2})
    draft = _model(
        tmp_path / "models",
        "yuhuili--EAGLE3-LLaMA3.1-Instruct-8B",
        {"eagle_config": {"eagle_aux_hidden_state_layer_ids": [0, 1, 2]}, TOP_LEVEL: [0, 1, 2]},
    )
    proc = _run("plan", target, draft, tmp_path)
    assert proc.returncode == 0, proc.stderr
    checks = {check["name"]: check for check in json.loads(proc.stdout)["preflight"]["checks"]}
    assert checks["compatibility.aux_layers"]["result"] == "pass"
    assert checks["compatibility.aux_layers"]["figures"]["aux_layer_ids"] == "[0, 1, 2]"
