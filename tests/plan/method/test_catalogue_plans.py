"""Each family of the catalogue, selected the way a client selects it (NIM's name where NIM serves the model,
else the repository id), plans the method its publisher published: `NIM_MODEL_NAME=<name> NIM_SPECDEC_ENABLE=1
nim-specdec plan`, on every known vLLM release. The table is written from the sources cited in
tests/data/model_configs/SOURCES.md, not read back from the entries, so an entry that drifts fails here."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from nim_specdec.engines.vllm.release.vllm_schema import known_versions
from nim_specdec.launch.resolve import plan_for
from nim_specdec.plan.method.builtin import default_config_dir, load_registry
from nim_specdec.plan.plan_facts import Facts
from nim_specdec.plan.plan_model import plan_json

REGISTRY = load_registry(default_config_dir())

# name a client asks for -> (method, the draft the plan materializes, or None)
PUBLISHED = {
    "openai/gpt-oss-120b": ("eagle3", "hf://nvidia/gpt-oss-120b-Eagle3-throughput"),
    "openai/gpt-oss-20b": ("eagle3", "hf://RedHatAI/gpt-oss-20b-speculator.eagle3"),
    "meta-llama/Llama-4-Maverick-17B-128E-Instruct": ("eagle3", "hf://nvidia/Llama-4-Maverick-17B-128E-Eagle3"),
    "qwen/qwen3-235b-a22b": ("eagle3", "hf://nvidia/Qwen3-235B-A22B-Eagle3"),
    "Qwen/Qwen3-30B-A3B": ("eagle3", "hf://nvidia/Qwen3-30B-A3B-Eagle3"),
    "Qwen/Qwen3-Next-80B-A3B-Thinking": ("mtp", None),
    "deepseek-ai/deepseek-v3": ("mtp", None),
    "deepseek-ai/deepseek-v3.2": ("mtp", None),
    "deepseek-ai/DeepSeek-V4-Flash": ("mtp", None),
    "deepseek-ai/DeepSeek-V4-Pro": ("mtp", None),
    "moonshotai/kimi-k2.6": ("eagle3", "hf://nvidia/Kimi-K2.6-Eagle3"),
    "zai-org/glm-5": ("mtp", None),
    "zai-org/GLM-5.1": ("mtp", None),
    "zai-org/glm-5.2": ("mtp", None),
    "nvidia/nemotron-3-super-120b-a12b": ("mtp", None),
    "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16": ("mtp", None),
    "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": ("eagle3", "hf://nvidia/EAGLE3-NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"),
    # DSpark ahead of the target's own MTP heads: NVIDIA's published vLLM figures (the entry's evidence)
    "nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4": (
        "dspark",
        "hf://nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4-DSpark",
    ),
    "minimax-m3": ("mtp", None),
    "google/gemma-4-26B-A4B": ("ngram", None),
}


def _plan(name: str, tmp_path, version: str) -> dict:
    env = {"NIM_CACHE_PATH": str(tmp_path), "NIM_SPECDEC_ENABLE": "1", "NIM_MODEL_NAME": name}
    shipped = Facts(registry=REGISTRY, flavor="vllm", python="python3", vllm_version=version)
    return plan_json(plan_for(env, [], shipped)[1])


@pytest.mark.parametrize("version", known_versions())
@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_each_family_plans_its_published_method(name, version, tmp_path):
    method, draft = PUBLISHED[name]
    plan = _plan(name, tmp_path, version)
    assert plan["speculative"]["enabled"] is True
    assert plan["speculative"]["method"] == method
    assert plan["speculative"]["origin"]["method"] == "builtin"  # the entry chose it, not a fallback
    assert (plan["draft"] or {}).get("source") == draft


def test_every_nim_name_in_the_catalogue_is_in_the_table():
    """A new NIM-named entry gets a row above, so its method is checked the way its clients select it."""
    assert {e.nim_name for e in REGISTRY if e.nim_name} <= set(PUBLISHED) | {
        "meta/llama-3.1-8b-instruct",
        "meta/llama-3.3-70b-instruct",
        "mistralai/mistral-7b-instruct-v0.3",
        "qwen/qwen2.5-7b-instruct",
        "moonshotai/kimi-k2-instruct",
    }


@pytest.mark.parametrize("name", sorted(n for n in PUBLISHED if n == n.lower() and "/" in n))
def test_the_command_line_plans_it(name, tmp_path):
    """The command a platform engineer runs, for each NIM name: exit 0, the method on stdout's plan."""
    env = {
        **os.environ,
        "NIM_CACHE_PATH": str(tmp_path),
        "NIM_SPECDEC_ENABLE": "1",
        "NIM_MODEL_NAME": name,
        "NIM_PLAN_VLLM_VERSION": "0.34.0",
    }
    done = subprocess.run(
        [sys.executable, "-m", "nim_specdec", "plan"], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["speculative"]["method"] == PUBLISHED[name][0]


DATA = default_config_dir().parents[1] / "tests" / "data" / "model_configs"
RAW = {path.name: json.loads(path.read_text()) for path in sorted(default_config_dir().glob("*.json"))}


# Published config.json files that hold what Python's json module writes for a non-finite float: NVIDIA's
# Nemotron 3 Super checkpoints write "time_step_limit": [0.0, Infinity] (transformers' default (0.0, inf)), which
# transformers and vLLM read. The entry plans on it like every other (it stopped with exit 3 once).
NON_FINITE = {"nemotron-3-super-120b-a12b.json": "Infinity"}


@pytest.mark.parametrize("file", sorted(RAW))
def test_the_preflight_passes_each_entry_on_its_published_config(file, tmp_path):
    """The entry's own config against the target's published config.json (a local directory, so the pre-flight
    reads it): nothing fails. An EAGLE3 draft whose config.json is not stored here is reported as not checked."""
    entry = RAW[file]
    spec = dict(entry["speculative_config"])
    env = {
        **os.environ,
        "NIM_CACHE_PATH": str(tmp_path),
        "NIM_SPECDEC_ENABLE": "1",
        "NIM_MODEL_PATH": str(DATA / entry["test_config"]),
    }
    if entry["draft"]:
        env["NIM_DRAFT_MODEL_PATH"] = entry["draft"]["source"]
        spec["model"] = "draft"
    done = subprocess.run(
        [sys.executable, "-m", "nim_specdec", "plan", "--speculative-config", json.dumps(spec)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if file in NON_FINITE:  # the published file still holds it, so this case keeps testing that path
        assert NON_FINITE[file] in (DATA / entry["test_config"] / "config.json").read_text()
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    results = {check["name"]: check["result"] for check in plan["preflight"]["checks"]}
    assert "fail" not in results.values(), plan["preflight"]["checks"]
    family = plan["speculative"]["method"]
    assert family == spec["method"]
    if family == "mtp":
        assert results["compatibility.mtp_heads"] == "pass"
    if family == "eagle3":
        assert results["compatibility.draft"] == "skipped"  # the draft's config.json is published, not stored


LIGHTNING = "nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4"


@pytest.mark.parametrize(
    "version,error",
    [
        ("0.32.0", "speculative_config key 'draft_lm_head_quantization' is new in vLLM 0.33.0"),
        ("0.33.0", "draft_lm_head_quantization is not supported for method 'dspark'"),
        ("0.34.0", None),
    ],
)
def test_the_dspark_entrys_keys_are_checked_per_release(version, error, tmp_path):
    """0.34 quantizes a DSpark head's LM head; 0.33 only EAGLE's and MTP's, 0.32 has no such key: one line each."""
    env = {
        **os.environ,
        "NIM_CACHE_PATH": str(tmp_path),
        "NIM_SPECDEC_ENABLE": "1",
        "NIM_MODEL_NAME": LIGHTNING,
        "NIM_PLAN_VLLM_VERSION": version,
        "NIM_SPECDEC_ARGS": json.dumps({"speculative_config": {"draft_lm_head_quantization": "fp8"}}),
    }
    done = subprocess.run(
        [sys.executable, "-m", "nim_specdec", "plan"], env=env, capture_output=True, text=True, timeout=120
    )
    if error is None:
        assert done.returncode == 0, done.stderr
        spec = json.loads(done.stdout)["speculative"]
        assert spec["method"] == "dspark" and spec["config"]["draft_lm_head_quantization"] == "fp8"
    else:
        errors = [line for line in done.stderr.splitlines() if line.startswith("nim-specdec: error:")]
        assert done.returncode == 2 and len(errors) == 1 and error in errors[0], done.stderr


def test_model_free_the_registered_dspark_head_goes_ahead_of_the_targets_mtp_heads(tmp_path):
    """Served by its repository id (model-free, the hub id as the model argument), the target declares MTP heads, yet
    the registered head with its evidence is chosen; a draft the user names still wins over the registered one."""
    shipped = Facts(registry=REGISTRY, flavor="vllm", python="python3")
    env = {"NIM_CACHE_PATH": str(tmp_path), "NIM_SPECDEC_ENABLE": "1"}
    plan = plan_json(plan_for(env, ["--model", LIGHTNING], shipped)[1])
    assert plan["speculative"]["method"] == "dspark"
    assert "ahead of the guide's order on published evidence" in plan["speculative"]["reason"]
    mine = {**env, "NIM_DRAFT_MODEL_PATH": "hf://acme/my-eagle3-draft"}
    plan = plan_json(plan_for(mine, ["--model", LIGHTNING], shipped)[1])
    assert plan["speculative"]["method"] != "dspark"
