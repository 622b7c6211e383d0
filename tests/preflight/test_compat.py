"""Draft/target compatibility over the published config.json files of public models.

Each row: method, target, draft (by test-data directory), the draft's tensor layout, the
speculative config; then the expected result of every check, and the exact message of the
first failure (it names the remedy, so it is asserted word for word).
"""

from __future__ import annotations

import pytest
from preflight_data import eagle1_tensors, eagle3_tensors, load_config

from nim_specdec.engines.vllm.release.vllm_schema import knowledge_for
from nim_specdec.preflight.checkpoint import Checkpoint
from nim_specdec.preflight.compat import CompatInputs, compatibility_checks
from nim_specdec.preflight.safetensors_header import TensorInfo

L8B = "meta-llama--Llama-3.1-8B-Instruct"
L70B = "meta-llama--Llama-3.3-70B-Instruct"
EAGLE3_8B = "yuhuili--EAGLE3-LLaMA3.1-Instruct-8B"
EAGLE3_8B_SPECULATORS = "nm-testing--EAGLE3-LLaMA3.1-Instruct-8B-converted"
EAGLE1_8B = "yuhuili--EAGLE-LLaMA3-Instruct-8B"
KIMI = "moonshotai--Kimi-K2-Instruct"
KIMI_EAGLE3 = "AQ-MedAI--Kimi-K2-Instruct-eagle3"
DSV3 = "deepseek-ai--DeepSeek-V3"
GLM5 = "zai-org--GLM-5"
QWEN35 = "Qwen--Qwen3.5-27B"
QWEN3_NEXT = "Qwen--Qwen3-Next-80B-A3B-Thinking"
QWEN25 = "Qwen--Qwen2.5-7B-Instruct"
MISTRAL = "mistralai--Mistral-7B-Instruct-v0.3"
MINIMAX_M3 = "MiniMaxAI--MiniMax-M3"  # minimax_m3: declares an MTP layer that no vLLM release has a drafter for
MINIMAX_M3_VL = "nvidia--MiniMax-M3-NVFP4"  # minimax_m3_vl: the same model's VL checkpoint, which vLLM rewrites

WHERE = "draft hf://org/draft"
SET_EAGLE3 = 'set "method": "eagle3" in the speculative config (NIM_SPECDEC_ARGS or --speculative-config)'
SET_EAGLE = 'set "method": "eagle" in the speculative config (NIM_SPECDEC_ARGS or --speculative-config)'
OTHER_DRAFT = "use a draft trained for this target (NIM_DRAFT_MODEL_PATH), or a method without a draft (mtp, ngram)"
NO_MTP = (
    "speculative_config: method 'mtp' needs MTP heads but the target's config.json declares none (looked for "
    "num_nextn_predict_layers, mtp_num_hidden_layers, num_mtp_modules, num_mtp_layers); use method eagle3 with a draft "
    "(NIM_DRAFT_MODEL_PATH) or method ngram"
)

E3_8B = eagle3_tensors(4096, 128256, 32000)
E3_KIMI = eagle3_tensors(7168, 163840, 32000, heads=64, kv_heads=64, intermediate=18432)
EAGLE_OK = {
    "compatibility.method": "pass",
    "compatibility.architecture": "pass",
    "compatibility.hidden_size": "pass",
    "compatibility.vocabulary": "pass",
}
EAGLE3_OK = {**EAGLE_OK, "compatibility.aux_layers": "pass"}


def _ckpt(tensors):
    if tensors is None:
        return None
    infos = {n: TensorInfo(d, s, 0) for n, (d, s) in tensors.items()}
    return Checkpoint(("model.safetensors",), 0, infos)


CASES = [
    # id, method, target, draft, tensors, spec_config, expected results, first failure's message
    ("llama8b-eagle3", "eagle3", L8B, EAGLE3_8B, E3_8B, {}, EAGLE3_OK, None),
    ("llama8b-eagle3-speculators-format", "eagle3", L8B, EAGLE3_8B_SPECULATORS, E3_8B, {}, EAGLE3_OK, None),
    ("kimi-k2-eagle3", "eagle3", KIMI, KIMI_EAGLE3, E3_KIMI, {}, EAGLE3_OK, None),
    ("llama8b-eagle1", "eagle", L8B, EAGLE1_8B, eagle1_tensors(4096), {}, EAGLE_OK, None),
    (
        "eagle3-draft-run-as-eagle",
        "eagle",
        L8B,
        EAGLE3_8B,
        E3_8B,
        {},
        {**EAGLE_OK, "compatibility.method": "fail"},
        "speculative_config: method 'eagle' does not fit the draft: it is an EAGLE3 checkpoint "
        f"(draft_vocab_size in its config.json); {SET_EAGLE3}",
    ),
    (
        "eagle1-draft-run-as-eagle3",
        "eagle3",
        L8B,
        EAGLE1_8B,
        eagle1_tensors(4096),
        {},
        {**EAGLE3_OK, "compatibility.method": "fail"},
        "speculative_config: method 'eagle3' does not fit the draft: it is an EAGLE-1 checkpoint "
        f"(fc.weight [4096, 8192] takes 2 x hidden size); {SET_EAGLE}",
    ),
    (
        "eagle1-draft-without-weights-cannot-be-told",
        "eagle3",
        L8B,
        EAGLE1_8B,
        None,
        {},
        {**EAGLE3_OK, "compatibility.method": "skipped"},
        None,
    ),
    (
        "llama70b-with-8b-eagle1-draft",
        "eagle3",
        L70B,
        EAGLE1_8B,
        eagle1_tensors(4096),
        {},
        {**EAGLE3_OK, "compatibility.method": "fail", "compatibility.hidden_size": "fail"},
        "speculative_config: method 'eagle3' does not fit the draft: it is an EAGLE-1 checkpoint "
        f"(fc.weight [4096, 8192] takes 2 x hidden size); {SET_EAGLE}",
    ),
    (
        "llama70b-with-8b-draft",
        "eagle3",
        L70B,
        EAGLE3_8B,
        E3_8B,
        {},
        {**EAGLE3_OK, "compatibility.hidden_size": "fail"},
        f"{WHERE}: the draft expects a target hidden size of 4096 (hidden_size) but the target's is 8192; {OTHER_DRAFT}",  # noqa: E501
    ),
    (
        "mistral-with-llama-draft",
        "eagle3",
        MISTRAL,
        EAGLE3_8B,
        E3_8B,
        {},
        {**EAGLE3_OK, "compatibility.vocabulary": "fail"},
        f"{WHERE}: the draft embeds a vocabulary of 128256 tokens but the target's has 32768; {OTHER_DRAFT}",
    ),
    (
        "eagle3-without-d2t",
        "eagle3",
        KIMI,
        KIMI_EAGLE3,
        eagle3_tensors(7168, 163840, 32000, d2t=False),
        {},
        {**EAGLE3_OK, "compatibility.vocabulary": "fail"},
        f"{WHERE}: its draft_vocab_size 32000 differs from the target's vocab_size 163840 and its weights have no d2t "
        f"tensor to map one onto the other; {OTHER_DRAFT}",
    ),
    (
        "eagle3-d2t-wrong-length",
        "eagle3",
        L8B,
        EAGLE3_8B,
        {**E3_8B, "d2t": ("I64", (16000,))},
        {},
        {**EAGLE3_OK, "compatibility.vocabulary": "fail"},
        f"{WHERE}: its d2t tensor has shape [16000], not [32000] as draft_vocab_size says; {OTHER_DRAFT}",
    ),
    (
        "eagle3-weights-not-safetensors",
        "eagle3",
        L8B,
        EAGLE3_8B,
        None,
        {},
        {**EAGLE3_OK, "compatibility.vocabulary": "skipped"},
        None,
    ),
    ("draft_model-same-tokenizer", "draft_model", L70B, L8B, None, {}, {"compatibility.vocabulary": "pass"}, None),
    (
        "draft_model-other-tokenizer",
        "draft_model",
        L8B,
        QWEN25,
        None,
        {},
        {"compatibility.vocabulary": "fail"},
        f"{WHERE}: the draft's vocabulary has 152064 tokens but the target's has 128256; use a draft model that shares "
        "the target's tokenizer (NIM_DRAFT_MODEL_PATH), or method ngram",
    ),
    (
        "deepseek-v3-mtp",
        "mtp",
        DSV3,
        None,
        None,
        {"num_speculative_tokens": 1},
        {"compatibility.mtp_heads": "pass", "compatibility.num_speculative_tokens": "pass"},
        None,
    ),
    (
        "glm5-mtp-default-k",
        "mtp",
        GLM5,
        None,
        None,
        {},
        {"compatibility.mtp_heads": "pass", "compatibility.num_speculative_tokens": "pass"},
        None,
    ),
    (
        "qwen3.5-mtp-in-text-config",
        "mtp",
        QWEN35,
        None,
        None,
        {"num_speculative_tokens": 2},
        {"compatibility.mtp_heads": "pass", "compatibility.num_speculative_tokens": "warn"},
        None,
    ),
    (
        "qwen3-next-mtp-by-model-type",
        "mtp",
        QWEN3_NEXT,
        None,
        None,
        {"num_speculative_tokens": 2},
        {"compatibility.mtp_heads": "pass", "compatibility.num_speculative_tokens": "pass"},
        None,
    ),
    (
        "qwen3-next-mtp-needs-k",
        "mtp",
        QWEN3_NEXT,
        None,
        None,
        {},
        {"compatibility.mtp_heads": "pass", "compatibility.num_speculative_tokens": "fail"},
        "speculative_config: num_speculative_tokens is not set and this target does not state its number of MTP heads; "
        'set "num_speculative_tokens": 1 in the speculative config',
    ),
    ("kimi-k2-zero-mtp-layers", "mtp", KIMI, None, None, {}, {"compatibility.mtp_heads": "fail"}, NO_MTP),
    (
        "minimax-m3-mtp-without-a-drafter",
        "mtp",
        MINIMAX_M3,
        None,
        None,
        {"num_speculative_tokens": 1},
        {"compatibility.mtp_heads": "fail"},
        "speculative_config: model type minimax_m3 has an MTP layer (num_nextn_predict_layers) but vLLM 0.32.0 has no "
        "MTP drafter for it; use method eagle3 with a draft (NIM_DRAFT_MODEL_PATH) or method ngram",
    ),
    (
        "minimax-m3-vl-mtp",
        "mtp",
        MINIMAX_M3_VL,
        None,
        None,
        {"num_speculative_tokens": 1},
        {"compatibility.mtp_heads": "pass", "compatibility.num_speculative_tokens": "pass"},
        None,
    ),
    ("llama-has-no-mtp", "mtp", L8B, None, None, {}, {"compatibility.mtp_heads": "fail"}, NO_MTP),
    ("ngram", "ngram", QWEN25, None, None, {"num_speculative_tokens": 3}, {"compatibility.ngram": "pass"}, None),
    ("suffix", "suffix", QWEN25, None, None, {"num_speculative_tokens": 8}, {"compatibility.suffix": "pass"}, None),
    ("unknown-method", "medusa", L8B, None, None, {}, {"compatibility.method": "skipped"}, None),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_compatibility(case):
    _, method, target, draft, tensors, spec_config, expected, message = case
    checks = compatibility_checks(
        CompatInputs(
            method,
            spec_config,
            load_config(target),
            load_config(draft) if draft else None,
            _ckpt(tensors),
            WHERE,
        )
    )
    assert {c.name: c.result for c in checks} == expected
    failures = [c.message for c in checks if c.result == "fail"]
    assert failures[:1] == ([message] if message else [])


def test_mtp_tokens_follow_vllms_divisibility_rule():
    target = {**load_config(DSV3), "num_nextn_predict_layers": 2}
    for k, result in [(1, "pass"), (2, "pass"), (4, "warn"), (3, "fail")]:
        checks = compatibility_checks(CompatInputs("mtp", {"num_speculative_tokens": k}, target, None, None, WHERE))
        assert checks[1].result == result, k
    assert checks[1].message == (
        "speculative_config: num_speculative_tokens:3 must be divisible by n_predict=2; "
        "set num_speculative_tokens to 2 or a multiple of it"
    )


def test_architecture_vllm_cannot_build_as_eagle3():
    draft = {**load_config(EAGLE3_8B), "architectures": ["MistralForCausalLM"]}
    checks = compatibility_checks(CompatInputs("eagle3", {}, load_config(L8B), draft, _ckpt(E3_8B), WHERE))
    assert [c.message for c in checks if c.result == "fail"] == [
        f"{WHERE}: vLLM has no eagle3 implementation for architecture Eagle3MistralForCausalLM (from "
        f"['MistralForCausalLM']); {OTHER_DRAFT}"
    ]


def test_figures_name_what_was_compared():
    checks = compatibility_checks(
        CompatInputs("eagle3", {}, load_config(KIMI), load_config(KIMI_EAGLE3), _ckpt(E3_KIMI), WHERE)
    )
    figures = {c.name: c.figures for c in checks}
    assert figures["compatibility.vocabulary"] == {
        "target_vocab_size": 163840,
        "draft_vocab_size": 32000,
        "mapping": "d2t",
    }
    assert figures["compatibility.architecture"] == {"architectures": ["LlamaForCausalLMEagle3"]}
    assert figures["compatibility.method"]["evidence"] == "architecture LlamaForCausalLMEagle3"


def test_checks_needing_the_target_are_skipped_without_it():
    checks = compatibility_checks(CompatInputs("eagle3", {}, None, load_config(EAGLE3_8B), _ckpt(E3_8B), WHERE))
    skipped = {c.name: c.message for c in checks if c.result == "skipped"}
    assert skipped == {
        "compatibility.hidden_size": "the target's config.json is not available locally",
        "compatibility.vocabulary": "the target's config.json is not available locally",
        "compatibility.aux_layers": "the target's config.json is not available locally",
    }


def test_the_release_decides_whether_declared_mtp_heads_have_a_drafter():
    """step5's MTP drafter (step5_mtp) is new in vLLM 0.33.0: the same target fails on 0.32.0 and passes from 0.33.0."""
    step5 = {"model_type": "step5", "architectures": ["Step5ForCausalLM"], "num_nextn_predict_layers": 1}
    for version, result in [("0.32.0", "fail"), ("0.33.0", "pass"), ("0.34.0", "pass")]:
        known = knowledge_for(version)
        checks = compatibility_checks(
            CompatInputs("mtp", {"num_speculative_tokens": 1}, step5, None, None, WHERE, known)
        )
        assert checks[0].name == "compatibility.mtp_heads" and checks[0].result == result, version
