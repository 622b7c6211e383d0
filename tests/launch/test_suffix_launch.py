"""Suffix decoding in the launcher: the schema's ranges, the three ways to ask for it, and the
package check that stops `serve` before vLLM starts when arctic-inference is missing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from core_fixtures import REGISTRY, facts
from nim_specdec.errors import EXIT_CONFIG, EXIT_MATERIALIZE, LauncherError, MaterializeError
from nim_specdec.launch.facts import importable, require_method_package
from nim_specdec.launch.resolve import plan_for
from nim_specdec.plan.method.builtin import entry_from_json
from nim_specdec.plan.plan_model import plan_json

SRC = Path(__file__).resolve().parents[2] / "src"


def plan_of(env, args, facts_) -> dict:
    return plan_json(plan_for(env, args, facts_)[1])


def _env(models, extra=None):
    return {"NIM_CACHE_PATH": str(models["cache"]), "NIM_MODEL_PATH": str(models["target"]), **(extra or {})}


def _spec_arg(plan) -> dict:
    argv = plan["argv"]
    return json.loads(argv[argv.index("--speculative-config") + 1])


# (key, value, accepted?, fragment of the message when refused)
RANGE_CASES = [
    ("suffix_decoding_max_tree_depth", 1, True, None),
    ("suffix_decoding_max_tree_depth", 0, False, "suffix_decoding_max_tree_depth = 0 must be >= 1"),
    ("suffix_decoding_max_cached_requests", 0, True, None),
    ("suffix_decoding_max_cached_requests", -1, False, "suffix_decoding_max_cached_requests = -1 must be >= 0"),
    ("suffix_decoding_max_spec_factor", 0, True, None),
    ("suffix_decoding_max_spec_factor", 2.5, True, None),
    ("suffix_decoding_max_spec_factor", -0.5, False, "suffix_decoding_max_spec_factor = -0.5 must be >= 0"),
    ("suffix_decoding_min_token_prob", 0.0, True, None),
    ("suffix_decoding_min_token_prob", 1, True, None),
    ("suffix_decoding_min_token_prob", 1.5, False, "suffix_decoding_min_token_prob = 1.5 must be in [0, 1]"),
    ("suffix_decoding_min_token_prob", -0.1, False, "suffix_decoding_min_token_prob = -0.1 must be in [0, 1]"),
    ("suffix_decoding_max_tree_depth", 2.5, False, "suffix_decoding_max_tree_depth = 2.5 is not an integer"),
]


@pytest.mark.parametrize("key,value,ok,fragment", RANGE_CASES, ids=[f"{c[0]}={c[1]}" for c in RANGE_CASES])
def test_suffix_key_ranges(models, key, value, ok, fragment):
    config = {"method": "suffix", "num_speculative_tokens": 8, key: value}
    args = ["--speculative-config", json.dumps(config)]
    if ok:
        plan = plan_of(_env(models), args, facts())
        assert _spec_arg(plan)[key] == value
        return
    with pytest.raises(LauncherError) as info:
        plan_for(_env(models), args, facts())
    assert info.value.exit_code == EXIT_CONFIG
    assert info.value.where == "--speculative-config"
    assert fragment in info.value.one_line()


SUFFIX = {
    "method": "suffix",
    "num_speculative_tokens": 12,
    "suffix_decoding_max_cached_requests": 0,
    "suffix_decoding_min_token_prob": 0.2,
}


def test_suffix_from_nim_specdec_args(models):
    env = _env(
        models, {"NIM_SPECDEC_ENABLE": "1", "NIM_SPECDEC_ARGS": json.dumps({"speculative_config": json.dumps(SUFFIX)})}
    )
    plan = plan_of(env, [], facts())
    assert plan["speculative"]["method"] == "suffix"
    assert plan["speculative"]["origin"]["suffix_decoding_min_token_prob"] == "NIM_SPECDEC_ARGS"
    assert _spec_arg(plan) == SUFFIX
    assert plan["draft"] is None


def test_suffix_from_speculative_config_argument(models):
    plan = plan_of(_env(models), ["--speculative-config", json.dumps(SUFFIX)], facts())
    assert plan["speculative"]["method"] == "suffix"
    assert _spec_arg(plan) == SUFFIX


def test_suffix_from_a_builtin_config(models):
    entry = entry_from_json(
        {
            "model_id": "acme/Agent-7B",
            "aliases": [],
            "source": "hf://acme/Agent-7B",
            "speculative_config": SUFFIX,
            "draft": None,
        },
        "agent-7b.json",
    )
    registry_facts = replace(facts(), registry=(*REGISTRY, entry))
    env = {"NIM_CACHE_PATH": str(models["cache"]), "NIM_MODEL_NAME": "acme/Agent-7B", "NIM_SPECDEC_ENABLE": "1"}
    plan = plan_of(env, [], registry_facts)
    assert plan["speculative"]["method"] == "suffix"
    assert _spec_arg(plan) == SUFFIX
    # A user's key overrides the built-in one, the rest stays.
    env["NIM_SPECDEC_ARGS"] = '{"speculative_config": {"num_speculative_tokens": 4}}'
    plan = plan_of(env, [], registry_facts)
    assert _spec_arg(plan) == {**SUFFIX, "num_speculative_tokens": 4}


@pytest.mark.parametrize(
    "method,installed,raises",
    [
        ("suffix", False, True),
        ("suffix", True, False),
        ("ngram", False, False),
        (None, False, False),
    ],
)
def test_method_package_requirement(method, installed, raises):
    asked: list[str] = []

    def can_import(module: str) -> bool:
        asked.append(module)
        return installed

    if not raises:
        require_method_package(method, can_import)
        assert asked == (["arctic_inference.suffix_decoding"] if method == "suffix" else [])
        return
    with pytest.raises(MaterializeError) as info:
        require_method_package(method, can_import)
    line = info.value.one_line()
    assert info.value.exit_code == EXIT_MATERIALIZE
    assert "arctic-inference package, which is not installed" in line
    assert "pip install --no-build-isolation arctic-inference==0.3.0" in line


def test_importable_reads_the_real_environment():
    assert importable("json")
    assert not importable("nim_specdec_no_such_module")


def test_serve_without_arctic_inference_exits_3_before_vllm(models, tmp_path):
    """A Python whose arctic_inference lacks the suffix tree (a broken or foreign install) is refused."""
    shadow = tmp_path / "shadow" / "arctic_inference"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("")
    env = {**os.environ, **_env(models), "PYTHONPATH": f"{tmp_path / 'shadow'}{os.pathsep}{SRC}"}
    proc = subprocess.run(
        [sys.executable, "-m", "nim_specdec", "serve", "--speculative-config", json.dumps(SUFFIX)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == EXIT_MATERIALIZE, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert "arctic-inference" in lines[0] and "pip install" in lines[0]
    assert "Traceback" not in proc.stderr


def test_plan_warns_that_serve_would_stop(models, tmp_path):
    shadow = tmp_path / "shadow" / "arctic_inference"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("")
    env = {**os.environ, **_env(models), "PYTHONPATH": f"{tmp_path / 'shadow'}{os.pathsep}{SRC}"}
    proc = subprocess.run(
        [sys.executable, "-m", "nim_specdec", "plan", "--speculative-config", json.dumps(SUFFIX)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    warnings = json.loads(proc.stdout)["warnings"]
    assert any("serve would stop (exit 3)" in w and "arctic-inference" in w for w in warnings)
    # Where the package imports (make install builds it), the plan has no such warning.
    proc = subprocess.run(
        [sys.executable, "-m", "nim_specdec", "plan", "--speculative-config", json.dumps(SUFFIX)],
        env={**env, "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and not any("arctic" in w for w in json.loads(proc.stdout)["warnings"])
