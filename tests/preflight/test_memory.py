"""The GPU memory estimate of a plan, against injected GPU readings."""

from __future__ import annotations

import pytest
from preflight_data import ELEMENT_BYTES, eagle3_tensors, load_config

from nim_specdec.preflight.memory import Gpu, MemoryInputs, check_headroom, default_max_num_seqs, estimate, parse_length

GIB = 1024**3
H100 = Gpu(85520809984, 512 * 1024**2, "NVIDIA H100 80GB HBM3")
# Weight sizes as a sharded index states them (bf16 8B and 70B Llama, fp8 DeepSeek-V3), rounded as published.
L8B_WEIGHTS = 16060522496
L70B_WEIGHTS = 141107412992
DSV3_WEIGHTS = 688586727753


def _bytes(tensors) -> int:
    total = 0
    for dtype, shape in tensors.values():
        size = ELEMENT_BYTES[dtype]
        for dim in shape:
            size *= dim
        total += size
    return total


E3_8B = _bytes(eagle3_tensors(4096, 128256, 32000))
# No public config.json of a 70B EAGLE3 draft exists; this one has the 8B draft's keys at the 70B's sizes.
DRAFT_70B = {
    **load_config("yuhuili--EAGLE3-LLaMA3.1-Instruct-8B"),
    "hidden_size": 8192,
    "num_attention_heads": 64,
    "intermediate_size": 28672,
}
E3_70B = _bytes(eagle3_tensors(8192, 128256, 32000, heads=64, intermediate=28672))


def _inputs(
    method="eagle3",
    target="meta-llama--Llama-3.1-8B-Instruct",
    target_weights=L8B_WEIGHTS,
    draft="yuhuili--EAGLE3-LLaMA3.1-Instruct-8B",
    draft_weights=E3_8B,
    engine=None,
    spec=None,
    gpus=(H100,),
    mtp_heads=None,
):
    draft_config = draft if isinstance(draft, dict) or draft is None else load_config(draft)
    return MemoryInputs(
        method,
        {"num_speculative_tokens": 3} if spec is None else spec,
        engine or {},
        load_config(target),
        target_weights,
        draft_config,
        draft_weights,
        mtp_heads,
        gpus,
    )


def test_llama8b_with_its_eagle3_draft_fits_an_h100():
    check = check_headroom(_inputs(engine={"max_model_len": 8192}))
    assert check.result == "pass"
    f = check.figures
    assert f["kv_cache_bytes_per_token_target"] == 2 * 32 * 8 * 128 * 2
    assert f["kv_cache_bytes_per_token_draft"] == 2 * 1 * 8 * 128 * 2
    assert f["draft_weight_bytes"] == E3_8B == 849763584
    # vLLM's float32 logits and probabilities of the target, and the draft's logits, for k=3 more tokens x 1024 seqs
    assert f["verify_activation_bytes"] == 1024 * 3 * (2 * 128256 + 32000) * 4
    assert f["draft_kv_cache_bytes_full_concurrency"] == 4096 * 8192 * 1024
    assert f["required_bytes"] == L8B_WEIGHTS + E3_8B + f["verify_activation_bytes"] + (131072 + 4096) * 8192
    assert (f["max_num_seqs"], f["gpu_memory_utilization"], f["budget_bytes"]) == (1024, 0.92, int(H100.total * 0.92))
    assert (f["sequences_at_max_model_len"], f["sequences_at_max_model_len_without_speculation"]) == (52, 58)


def test_a_draft_that_tips_the_plan_over_names_the_guides_remedies_in_order():
    check = check_headroom(
        _inputs(
            target="meta-llama--Llama-3.3-70B-Instruct",
            target_weights=L70B_WEIGHTS,
            draft=DRAFT_70B,
            draft_weights=E3_70B,
            gpus=(H100, H100),
            engine={"max_model_len": 32768, "tensor_parallel_size": 2},
        )
    )
    assert check.result == "fail"
    assert check.message == (
        "GPU memory: the plan needs 75.4 GiB per GPU but NVIDIA H100 80GB HBM3 offers 73.3 GiB (79.6 GiB x "
        "gpu_memory_utilization 0.92): target weights 65.7 GiB, draft weights 1.3 GiB, activations to verify 3 tokens "
        "3.3 GiB, KV cache of one 32768-token sequence 5.1 GiB; without speculative decoding it would need 70.7 GiB; "
        "use a shorter NIM_MAX_MODEL_LEN (now 32768), lower concurrency (--max-num-seqs, now 1024), a different "
        "--gpu-memory-utilization (now 0.92), or a lighter method (mtp or ngram)"
    )
    shorter = check_headroom(
        _inputs(
            target="meta-llama--Llama-3.3-70B-Instruct",
            target_weights=L70B_WEIGHTS,
            draft=DRAFT_70B,
            draft_weights=E3_70B,
            gpus=(H100, H100),
            engine={"max_model_len": 8192, "tensor_parallel_size": 2},
        )
    )
    assert shorter.result == "pass"


def test_a_target_too_big_for_the_gpu_asks_for_more_gpus():
    check = check_headroom(
        _inputs(
            target="meta-llama--Llama-3.3-70B-Instruct", target_weights=L70B_WEIGHTS, engine={"max_model_len": 8192}
        )
    )
    assert check.message == (
        "GPU memory: the target's weights alone need 131.4 GiB per GPU but NVIDIA H100 80GB HBM3 offers 73.3 GiB "
        "(79.6 GiB x gpu_memory_utilization 0.92); spread the target over more GPUs (--tensor-parallel-size, now 1) "
        "or serve a quantized checkpoint"
    )


def test_memory_held_by_other_processes():
    busy = Gpu(H100.total, 20 * GIB, H100.name)
    check = check_headroom(_inputs(engine={"max_model_len": 8192}, gpus=(busy,)))
    assert check.message == (
        "GPU memory: NVIDIA H100 80GB HBM3 has 59.6 GiB free of 79.6 GiB, less than the 73.3 GiB that "
        "gpu_memory_utilization 0.92 reserves (other processes hold 20.0 GiB); lower --gpu-memory-utilization to "
        "0.74 or less, or stop the other processes on the GPU"
    )


def test_ngram_adds_only_verification_activations():
    f = estimate(
        _inputs(
            method="ngram",
            target="Qwen--Qwen2.5-7B-Instruct",
            draft=None,
            draft_weights=None,
            engine={"max_num_seqs": 64},
            spec={"num_speculative_tokens": 3},
        )
    )
    assert (f["draft_weight_bytes"], f["kv_cache_bytes_per_token_draft"]) == (0, 0)
    assert f["extra_bytes"] == f["verify_activation_bytes"] == 64 * 3 * 2 * 152064 * 4
    assert f["max_model_len"] == 32768  # derived from the target's config.json


def test_mtp_heads_add_kv_cache_of_their_layers_and_no_weights():
    f = estimate(
        _inputs(
            method="mtp",
            target="deepseek-ai--DeepSeek-V3",
            target_weights=DSV3_WEIGHTS,
            draft=None,
            draft_weights=None,
            spec={},
            mtp_heads=1,
            engine={"max_model_len": "32k", "tensor_parallel_size": 8},
        )
    )
    assert f["kv_cache_bytes_per_token_draft"] == 576 * 2  # one MLA layer: latent 512 + rope 64, bf16
    assert f["kv_cache_bytes_per_token_target"] == 61 * 576 * 2
    assert (f["draft_weight_bytes"], f["num_speculative_tokens"], f["max_model_len"]) == (0, 1, 32000)


def test_fp8_kv_cache_halves_the_cache():
    base = estimate(_inputs(engine={"max_model_len": 8192}))
    fp8 = estimate(_inputs(engine={"max_model_len": 8192, "kv_cache_dtype": "fp8"}))
    assert fp8["kv_cache_bytes_per_token_target"] * 2 == base["kv_cache_bytes_per_token_target"]
    assert fp8["kv_cache_bytes_per_token_draft"] * 2 == base["kv_cache_bytes_per_token_draft"]


@pytest.mark.parametrize(
    "inputs, reason",
    [
        (_inputs(gpus=None), "no GPU is visible (nvidia-ml-py or the NVIDIA driver is absent)"),
        (_inputs(target_weights=None), "the target's weights are not available locally to size them"),
        (
            _inputs(engine={"tensor_parallel_size": 4}, gpus=(H100, H100)),
            "tensor_parallel_size is 4 but 2 GPU(s) are visible",
        ),
    ],
)
def test_skipped_with_the_reason_and_the_estimate(inputs, reason):
    check = check_headroom(inputs)
    assert (check.result, check.message) == ("skipped", reason)
    assert check.figures["extra_bytes"] > 0


@pytest.mark.parametrize(
    "gpu, expected",
    [
        (None, 256),
        (Gpu(24 * GIB, 0, "NVIDIA L4"), 256),
        (Gpu(80 * GIB, 0, "NVIDIA A100-SXM4-80GB"), 256),
        (H100, 1024),
        (Gpu(141 * GIB, 0, "NVIDIA H200"), 1024),
        (Gpu(180 * GIB, 0, "NVIDIA B200"), 1024),
    ],
)
def test_vllms_default_concurrency_depends_on_the_gpu(gpu, expected):
    assert default_max_num_seqs(gpu) == expected


@pytest.mark.parametrize(
    "value, expected",
    [(4096, 4096), ("4096", 4096), ("32k", 32000), ("32K", 32768), ("1.5k", 1500), (-1, None), ("auto", None)],
)
def test_max_model_len_spellings(value, expected):
    assert parse_length(value) == expected


def test_an_unsplit_draft_costs_its_full_weights_on_every_gpu():
    engine = {"max_model_len": 8192, "tensor_parallel_size": 2}
    split = estimate(_inputs(engine=engine, gpus=(H100, H100)))
    whole = estimate(
        _inputs(engine=engine, gpus=(H100, H100), spec={"num_speculative_tokens": 3, "draft_tensor_parallel_size": 1})
    )
    assert (split["draft_weight_bytes"], whole["draft_weight_bytes"]) == (E3_8B // 2, E3_8B)
    assert whole["kv_cache_bytes_per_token_draft"] == 2 * split["kv_cache_bytes_per_token_draft"]


def test_pipeline_parallelism_splits_the_targets_weights_and_cache_across_stages():
    """TP 8 x PP 2 holds 1/16 of the 70B target per GPU, not 1/8; the draft stays whole on the last stage."""
    tp8 = {"max_model_len": 8192, "tensor_parallel_size": 8}
    alone = estimate(
        _inputs(
            target="meta-llama--Llama-3.3-70B-Instruct",
            target_weights=L70B_WEIGHTS,
            draft=DRAFT_70B,
            draft_weights=E3_70B,
            engine=tp8,
            gpus=(H100,) * 8,
        )
    )
    staged = estimate(
        _inputs(
            target="meta-llama--Llama-3.3-70B-Instruct",
            target_weights=L70B_WEIGHTS,
            draft=DRAFT_70B,
            draft_weights=E3_70B,
            engine={**tp8, "pipeline_parallel_size": 2},
            gpus=(H100,) * 8,
        )
    )
    assert staged["target_weight_bytes"] == L70B_WEIGHTS // 16 and alone["target_weight_bytes"] == L70B_WEIGHTS // 8
    assert staged["kv_cache_bytes_per_token_target"] * 2 == alone["kv_cache_bytes_per_token_target"]  # 80 layers / 2
    assert staged["draft_weight_bytes"] == alone["draft_weight_bytes"]
    assert staged["verify_activation_bytes"] == alone["verify_activation_bytes"]


# A DSpark head in the speculators layout (a few decoder layers over the target's hidden states, block size 8): made
# here, as no published DSpark head's config.json is stored.
DSPARK = {
    "architectures": ["DSparkDraftModel"],
    "model_type": "qwen3",
    "hidden_size": 4096,
    "num_hidden_layers": 5,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "intermediate_size": 14336,
    "vocab_size": 128256,
    "draft_vocab_size": 32000,
    "block_size": 8,
    "torch_dtype": "bfloat16",
}


@pytest.mark.parametrize("method", ["dspark", "dflash"])
def test_a_parallel_drafter_costs_its_weights_and_the_cache_of_its_layers(method):
    weights = 2 * 1024**3
    f = estimate(_inputs(method=method, draft=DSPARK, draft_weights=weights, spec={"num_speculative_tokens": 7}))
    assert f["draft_weight_bytes"] == weights
    assert f["kv_cache_bytes_per_token_draft"] == 2 * 5 * 8 * 128 * 2  # K and V, 5 layers, 8 KV heads, bf16
    assert f["verify_activation_bytes"] == 1024 * 7 * (2 * 128256 + 32000) * 4


def test_a_parallel_drafter_that_does_not_fit_names_the_lighter_methods():
    check = check_headroom(
        _inputs(method="dspark", draft=DSPARK, draft_weights=40 * GIB, engine={"max_model_len": 131072})
    )
    assert check.result == "fail" and check.message.endswith("or a lighter method (mtp or ngram)")
