"""vLLM 0.33's V2 runner lowering max_model_len to the draft's: where the plan warns, table-driven, and the line
run_preflight prints."""

from __future__ import annotations

import pytest
from preflight_data import load_config, model_dir  # noqa: F401 - model_dir is a fixture

from nim_specdec.config.preflight_modes import parse_preflight_modes
from nim_specdec.preflight import PreflightInputs, StaticProbe, run_preflight
from nim_specdec.preflight.context_length import uncached_rope_types, v2_max_model_len_check

L8B = load_config("meta-llama--Llama-3.1-8B-Instruct")  # 131072 positions, llama3 RoPE
EAGLE3 = load_config("yuhuili--EAGLE3-LLaMA3.1-Instruct-8B")  # 2048 positions, default RoPE
YARN = {"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096}}
SHORT_DRAFT = {**L8B, "num_hidden_layers": 1, "max_position_embeddings": 4096, "rope_scaling": None}

# (id, vLLM, runner, method, speculative config, engine args, draft config, served max_model_len or None)
CASES = [
    ("033-v2-draft-model", "0.33.0", "v2", "draft_model", {}, {"max_model_len": 8192}, SHORT_DRAFT, 4096),
    ("033-v2-draft-model-derived", "0.33.0", "v2", "draft_model", {}, {}, SHORT_DRAFT, 4096),
    ("033-v2-draft-model-fits", "0.33.0", "v2", "draft_model", {}, {"max_model_len": 4096}, SHORT_DRAFT, None),
    ("033-v2-spec-max-len", "0.33.0", "v2", "draft_model", {"max_model_len": 2000}, {}, SHORT_DRAFT, 2000),
    ("033-v2-eagle3-default-rope", "0.33.0", "v2", "eagle3", {}, {"max_model_len": 8192}, EAGLE3, None),
    ("033-v2-eagle3-yarn", "0.33.0", "v2", "eagle3", {}, {"max_model_len": 65536}, {**EAGLE3, **YARN}, 2048),
    ("033-v1-draft-model", "0.33.0", "v1", "draft_model", {}, {"max_model_len": 8192}, SHORT_DRAFT, None),
    ("032-v2-draft-model", "0.32.0", "v2", "draft_model", {}, {"max_model_len": 8192}, SHORT_DRAFT, None),
    ("033-v2-ngram", "0.33.0", "v2", "ngram", {}, {"max_model_len": 8192}, None, None),
    ("033-v2-mtp", "0.33.0", "v2", "mtp", {}, {"max_model_len": 8192}, SHORT_DRAFT, None),
]


@pytest.mark.parametrize(
    "version,runner,method,spec,engine,draft,served", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_where_v2_shortens_the_context(version, runner, method, spec, engine, draft, served):
    check = v2_max_model_len_check(version, runner, method, spec, engine, L8B, draft, "draft hf://org/d")
    if served is None:
        assert check is None
    else:
        assert check is not None and check.result == "warn"
        assert check.figures["served_max_model_len"] == served
        assert f"to {served}," in check.message and f"NIM_MAX_MODEL_LEN={served}" in check.message


@pytest.mark.parametrize(
    "config,kinds",
    [
        ({}, []),
        ({"rope_scaling": {"type": "linear", "factor": 2.0}}, []),
        ({"rope_parameters": {"rope_type": "llama3", "factor": 8.0}}, []),
        (YARN, ["yarn"]),
        (
            {"rope_parameters": {"full_attention": {"rope_type": "default"}, "sliding": {"rope_type": "dynamic"}}},
            ["dynamic"],
        ),
        ({"text_config": {"rope_scaling": {"rope_type": "longrope"}}}, ["longrope"]),
    ],
)
def test_rope_types_vllm_does_not_resize(config, kinds):
    assert uncached_rope_types(config) == kinds


def test_the_plan_prints_one_warning_line_and_goes_on_in_error_mode(model_dir):
    target = model_dir("target", L8B)
    draft = model_dir("draft", SHORT_DRAFT)
    lines: list[str] = []
    inputs = PreflightInputs(
        enabled=True,
        method="draft_model",
        spec_config={"method": "draft_model", "num_speculative_tokens": 3},
        target_dir=str(target),
        draft_dir=str(draft),
        draft_where="draft hf://org/short",
        engine_args={"max_model_len": 16384},
        runner="v2",
        vllm_version="0.33.0",
    )
    section = run_preflight(
        inputs, parse_preflight_modes({"NIM_SPECDEC_PREFLIGHT": "error"}), StaticProbe(None), warn=lines.append
    )
    found = [c for c in section.checks if c.name == "compatibility.max_model_len"]
    assert len(found) == 1 and found[0].result == "warn"
    assert lines == [
        "nim-specdec: warning: pre-flight compatibility.max_model_len: max_model_len: vLLM 0.33.0's V2 model runner "
        "will lower max_model_len from 16384 to 4096, the length of draft hf://org/short (a draft_model draft), "
        "without an error; set NIM_MAX_MODEL_LEN=4096 to make it explicit, use a draft with a context of 16384, or "
        "serve on the V1 runner (VLLM_USE_V2_MODEL_RUNNER=0), which skips speculation past the draft's length"
    ]
