"""Readings of config.json dicts, each as vLLM 0.32 makes them."""

from __future__ import annotations

import pytest

from nim_specdec.preflight import model_config as mc

LLAMA = {
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "num_hidden_layers": 32,
    "vocab_size": 128256,
    "torch_dtype": "bfloat16",
    "max_position_embeddings": 131072,
    "rope_scaling": {"rope_type": "llama3", "factor": 8.0},
}
MLA = {
    "hidden_size": 7168,
    "num_attention_heads": 128,
    "num_key_value_heads": 128,
    "kv_lora_rank": 512,
    "qk_rope_head_dim": 64,
    "num_hidden_layers": 61,
}


@pytest.mark.parametrize(
    "name, expected",
    [
        ("auto", 2),
        (None, 2),
        ("bfloat16", 2),
        ("float16", 2),
        ("half", 2),
        ("float32", 4),
        ("torch.bfloat16", 2),
        ("fp8", 1),
        ("fp8_e4m3", 1),
        ("fp8_e5m2", 1),
        ("float8_e4m3fn", 1),
        ("int8", 1),
    ],
)
def test_dtype_bytes(name, expected):
    assert mc.dtype_bytes(name) == expected


@pytest.mark.parametrize(
    "config, layers, elem, tp, expected",
    [
        (LLAMA, 32, 2, 1, 2 * 32 * 8 * 128 * 2),  # K and V, 8 KV heads of 128
        (LLAMA, 32, 2, 2, 2 * 32 * 4 * 128 * 2),  # KV heads split across ranks
        (LLAMA, 32, 2, 16, 2 * 32 * 1 * 128 * 2),  # fewer KV heads than ranks: one replica each
        (LLAMA, 1, 1, 1, 2 * 8 * 128),  # fp8 cache, one layer
        ({**LLAMA, "head_dim": 64}, 1, 2, 1, 2 * 8 * 64 * 2),  # explicit head_dim wins
        ({"text_config": LLAMA}, 2, 2, 1, 2 * 2 * 8 * 128 * 2),  # multimodal: the language model's fields
        (MLA, 61, 2, 1, 61 * 576 * 2),  # MLA: one latent of kv_lora_rank + rope dims
        (MLA, 61, 2, 8, 61 * 576 * 2),  # ... replicated on every rank
    ],
)
def test_kv_bytes_per_token(config, layers, elem, tp, expected):
    assert mc.kv_bytes_per_token(config, layers, elem, tp) == expected


@pytest.mark.parametrize(
    "config, expected",
    [
        (LLAMA, 131072),  # llama3 RoPE: max_position_embeddings is already scaled
        ({"max_position_embeddings": 4096, "rope_scaling": {"type": "linear", "factor": 2.0}}, 8192),
        ({"max_position_embeddings": 4096, "rope_scaling": {"rope_type": "yarn", "factor": 4.0}}, 4096),
        ({"max_position_embeddings": 8192, "seq_length": 4096}, 4096),  # the smallest key wins
        ({"max_position_embeddings": 8192, "model_max_length": 131072}, 131072),  # Command-R's override
        ({"text_config": {"max_position_embeddings": 32768}}, 32768),
        ({"hidden_size": 8}, None),
    ],
)
def test_derived_max_model_len(config, expected):
    assert mc.derived_max_model_len(config) == expected


def test_speculators_format_is_flattened_like_vllm_does():
    raw = {
        "speculators_model_type": "eagle3",
        "architectures": ["Eagle3Speculator"],
        "draft_vocab_size": 32000,
        "target_hidden_size": None,
        "transformer_layer_config": {
            "model_type": "llama",
            "hidden_size": 4096,
            "vocab_size": 128256,
            "num_hidden_layers": 1,
        },
    }
    view = mc.draft_view(raw)
    assert view["draft_vocab_size"] == 32000 and view["hidden_size"] == 4096 and "target_hidden_size" not in view
    assert mc.vocab_size(view) == 128256 and view["speculators_model_type"] == "eagle3"
    assert mc.draft_view(LLAMA) is LLAMA


def test_model_dtype_prefers_the_requested_dtype():
    assert mc.model_dtype_bytes({"torch_dtype": "bfloat16"}, "float32") == 4
    assert mc.model_dtype_bytes({"torch_dtype": "float32"}) == 2  # "auto" downcasts float32 checkpoints
    assert mc.model_dtype_bytes({"dtype": "float8_e4m3fn"}) == 1


@pytest.mark.parametrize(
    "config, expected",
    [
        ({"num_hidden_layers": 32}, 32),
        ({"num_hidden_layers": 48, "full_attention_interval": 4}, 12),
        ({"text_config": {"num_hidden_layers": 4, "layer_types": ["linear_attention", "full_attention"] * 2}}, 2),
        ({"num_hidden_layers": 3, "layer_types": ["sliding_attention", "full_attention", "mamba"]}, 2),
    ],
)
def test_attention_layers_leave_out_linear_attention(config, expected):
    assert mc.attention_layers(config) == expected
