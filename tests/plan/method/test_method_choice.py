"""The model-free choice takes MTP only where the vLLM release it plans for has an MTP drafter for the target (its
snapshot's mtp_targets, what SpeculativeConfig.hf_config_override rewrites); a target that declares MTP layers
its release cannot serve goes on down the guide's order, and the plan's reason says why."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nim_specdec.engines.protocol.engine import Installation
from nim_specdec.engines.vllm.engine import VllmEngine
from nim_specdec.engines.vllm.release.vllm_schema import knowledge_for, known_versions
from nim_specdec.launch.resolve import plan_for
from nim_specdec.plan.method.builtin import BuiltinEntry
from nim_specdec.plan.method.method_choice import choose, mtp_drafter
from nim_specdec.plan.plan_facts import Facts
from nim_specdec.plan.plan_model import plan_json

DATA = Path(__file__).parents[2] / "data" / "model_configs"


def _published(directory: str) -> dict:
    return json.loads((DATA / directory / "config.json").read_text())


MINIMAX_M3 = _published("MiniMaxAI--MiniMax-M3")  # minimax_m3, num_nextn_predict_layers: 1
MINIMAX_M3_VL = _published("nvidia--MiniMax-M3-NVFP4")  # minimax_m3_vl, text_config.num_mtp_modules: 1
DEEPSEEK_V3 = _published("deepseek-ai--DeepSeek-V3")
STEP5 = {"model_type": "step5", "architectures": ["Step5ForCausalLM"], "num_nextn_predict_layers": 1}
GLM4_MOE = {"model_type": "glm4_moe", "architectures": ["Glm4MoeForCausalLM"], "num_nextn_predict_layers": 1}
# A wrapper whose text_config vLLM promotes before it looks for MTP (hf_config_override's Nemotron-H Omni branch)
OMNI = {
    "model_type": "omni_wrapper",
    "architectures": ["NemotronH_Super_Omni_Reasoning_V3"],
    "text_config": {"model_type": "nemotron_h", "num_nextn_predict_layers": 1},
}
OMNI_LLAMA = {**OMNI, "text_config": {"model_type": "llama", "num_nextn_predict_layers": 1}}
EAGLE3_ENTRY = BuiltinEntry(
    "MiniMaxAI/MiniMax-M3",
    (),
    "hf://MiniMaxAI/MiniMax-M3",
    {"method": "eagle3", "model": "draft", "num_speculative_tokens": 3},
    draft_source="hf://acme/minimax-m3-eagle3",
    file="minimax-m3.json",
)
NO_DRAFTER = (
    "model type minimax_m3 has an MTP layer (num_nextn_predict_layers=1) but vLLM {v} has no MTP drafter for it"
)

# case -> (target config, releases, registered entry, a draft named by NIM_DRAFT_MODEL_PATH, method, reason part)
CASES = {
    "mapped by model_type": (DEEPSEEK_V3, known_versions(), None, False, "mtp", "vLLM {v} drafts with deepseek_mtp"),
    "mapped by the VL wrapper's type": (MINIMAX_M3_VL, known_versions(), None, False, "mtp", "minimax_m3_mtp"),
    "mapped by architecture": (GLM4_MOE, known_versions(), None, False, "mtp", "drafts with glm4_moe_mtp"),
    "mapped through the promoted text_config": (
        OMNI,
        known_versions(),
        None,
        False,
        "mtp",
        "drafts with nemotron_h_mtp",
    ),
    "promoted, but its text model has no drafter": (
        OMNI_LLAMA,
        known_versions(),
        None,
        False,
        "ngram",
        "model type omni_wrapper has an MTP layer (text_config.num_nextn_predict_layers=1) but vLLM {v} has no MTP",
    ),
    "declared, no drafter: n-gram": (MINIMAX_M3, known_versions(), None, False, "ngram", NO_DRAFTER),
    "declared, no drafter: the user's draft": (MINIMAX_M3, known_versions(), None, True, "eagle3", NO_DRAFTER),
    "declared, no drafter: the registered draft": (
        MINIMAX_M3,
        known_versions(),
        EAGLE3_ENTRY,
        False,
        "eagle3",
        NO_DRAFTER,
    ),
    "step5 before its drafter (0.32)": (STEP5, ("0.32.0",), None, False, "ngram", "no MTP drafter"),
    "step5 from 0.33": (STEP5, ("0.33.0", "0.34.0"), None, False, "mtp", "drafts with step5_mtp"),
    "a model_type that is not a name": (
        {**MINIMAX_M3, "model_type": ["x"]},
        ("0.34.0",),
        None,
        False,
        "ngram",
        "model type (none)",
    ),
    "a release without a snapshot": (MINIMAX_M3, ("0.35.0",), None, False, "ngram", "vLLM 0.35.0 (read as 0.34.0)"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_mtp_only_where_the_release_has_a_drafter(case):
    config, versions, entry, user_draft, method, reason = CASES[case]
    for version in versions:
        choice = choose(config, entry, user_draft, None, VllmEngine(Installation("vllm", version)))
        assert choice.config["method"] == method, (version, choice.reason)
        assert reason.format(v=version) in choice.reason, (version, choice.reason)


def test_the_snapshots_record_the_drafters_each_release_has():
    """Read from each release's hf_config_override by scripts/vllm_schema_gen.py (test_release_wheels compares)."""
    for version in known_versions():
        known = knowledge_for(version)
        assert mtp_drafter(DEEPSEEK_V3, known) == "deepseek_mtp"
        assert mtp_drafter({"model_type": "nemotron_h"}, known) == "nemotron_h_mtp"
        assert mtp_drafter(MINIMAX_M3_VL, known) == "minimax_m3_mtp"
        assert mtp_drafter(MINIMAX_M3, known) is None
        assert set(known.data["mtp_targets"]["model_types"].values()) <= set(known.mtp_methods)
    assert mtp_drafter(STEP5, knowledge_for("0.32.0")) is None
    assert mtp_drafter(STEP5, knowledge_for("0.33.0")) == "step5_mtp"


@pytest.mark.parametrize("version", known_versions())
def test_the_plan_of_minimax_m3_falls_back_and_says_why(version, tmp_path):
    """Model-free on the published MiniMax-M3 checkpoint: n-gram, not an MTP config vLLM stops on at start."""
    env = {
        "NIM_CACHE_PATH": str(tmp_path),
        "NIM_SPECDEC_ENABLE": "1",
        "NIM_MODEL_PATH": str(DATA / "MiniMaxAI--MiniMax-M3"),
    }
    plan = plan_json(plan_for(env, [], Facts(flavor="vllm", python="python3", vllm_version=version))[1])
    assert plan["speculative"]["method"] == "ngram"
    assert plan["speculative"]["reason"] == (
        "auto-chosen for model-free mode: ngram: no registered EAGLE3 draft for this model ("
        + NO_DRAFTER.format(v=version)
        + ")"
    )


def test_mtp_asked_for_on_minimax_m3_is_one_line_before_anything_starts(tmp_path):
    """Given explicitly, the same target's MTP config stops the plan (the pre-flight's compatibility check), instead of
    vLLM stopping at start with "Unsupported speculative method: 'mtp'"."""
    env = {
        **os.environ,
        "NIM_CACHE_PATH": str(tmp_path),
        "NIM_MODEL_PATH": str(DATA / "MiniMaxAI--MiniMax-M3"),
        "NIM_PLAN_VLLM_VERSION": "0.34.0",
    }
    spec = json.dumps({"method": "mtp", "num_speculative_tokens": 1})
    done = subprocess.run(
        [sys.executable, "-m", "nim_specdec", "plan", "--speculative-config", spec],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    errors = [line for line in done.stderr.splitlines() if line.startswith("nim-specdec: error:")]
    assert done.returncode == 2 and len(errors) == 1, done.stderr
    assert (
        "model type minimax_m3 has an MTP layer (num_nextn_predict_layers) but vLLM 0.34.0 has no MTP drafter"
        in (errors[0])
    )
