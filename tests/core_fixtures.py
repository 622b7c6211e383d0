"""Plain-data helpers shared by the core tests: a small built-in registry and model directories."""

from __future__ import annotations

import json
from pathlib import Path

from nim_specdec.engines.vllm.release.vllm_schema import DEFAULT, VllmKnowledge
from nim_specdec.engines.vllm.spec.spec_schema import normalise_keys, validate_complete, validate_fields
from nim_specdec.plan.method.builtin import entry_from_json
from nim_specdec.plan.plan_facts import Facts, SourceFacts

LLAMA = {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "vocab_size": 128256}
EAGLE3 = {"architectures": ["LlamaForCausalLMEagle3"], "hidden_size": 4096, "vocab_size": 128256}
MTP_TARGET = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "num_nextn_predict_layers": 1}

# A small registry with one entry per method, in the shipped file format.
REGISTRY = tuple(
    entry_from_json(data, f"{data['model_id'].split('/')[1].lower()}.json")
    for data in (
        {
            "model_id": "meta-llama/Llama-3.1-8B-Instruct",
            "nim_name": "meta/llama-3.1-8b-instruct",
            "aliases": ["llama-3.1-8b-instruct"],
            "source": "hf://meta-llama/Llama-3.1-8B-Instruct",
            "speculative_config": {"method": "eagle3", "model": "eagle3_draft", "num_speculative_tokens": 3},
            "draft": {
                "source": "hf://yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
                "published_at": "https://huggingface.co/yuhuili",
            },
        },
        {
            "model_id": "deepseek-ai/DeepSeek-V3",
            "aliases": [],
            "source": "hf://deepseek-ai/DeepSeek-V3",
            "speculative_config": {"method": "mtp", "num_speculative_tokens": 1},
            "draft": None,
        },
        {
            "model_id": "mistralai/Mistral-7B-Instruct-v0.3",
            "aliases": [],
            "source": "hf://mistralai/Mistral-7B-Instruct-v0.3",
            "speculative_config": {
                "method": "ngram",
                "num_speculative_tokens": 3,
                "prompt_lookup_max": 4,
                "prompt_lookup_min": 1,
            },
            "draft": None,
        },
    )
)


def write_model(directory: Path, config: dict) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(config))
    return directory


def make_models(tmp_path: Path) -> dict[str, Path]:
    return {
        "target": write_model(tmp_path / "models" / "target", LLAMA),
        "draft": write_model(tmp_path / "models" / "draft", EAGLE3),
        "mtp": write_model(tmp_path / "models" / "mtp", MTP_TARGET),
        "cache": tmp_path / "cache",
    }


def facts(**sources: SourceFacts) -> Facts:
    return Facts(registry=REGISTRY, flavor="vllm", python="python3", sources=sources)


def validate_spec_config(config, where: str, known: VllmKnowledge = DEFAULT) -> None:
    """One speculative config on its own through the plan's checks of a layer and of the merged config
    (ConfigError for the first problem; `where` names the source)."""
    config = normalise_keys(config, where)
    validate_fields(config, where, known)
    validate_complete(config, where, known=known)
