"""Which model sources are gated on the Hugging Face Hub, for the checks that HF_TOKEN is passed.

The Hub gates whole organisations' models behind accepted terms; these are the ones among the built-in
sources (configs/builtin_specdec): Meta's Llama and Mistral's models. A container on such a source
without HF_TOKEN fails at its first download with "the repository is gated".
"""

from __future__ import annotations

import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GATED_HF_PREFIXES = ("hf://meta-llama/", "hf://mistralai/")


def is_gated(source: str) -> bool:
    return source.startswith(GATED_HF_PREFIXES)


def builtin_sources() -> dict[str, list[str]]:
    """Every name of a built-in model (its id, its NIM name, its aliases) -> its target and draft sources."""
    names: dict[str, list[str]] = {}
    for path in sorted((REPO / "configs" / "builtin_specdec").glob("*.json")):
        config = json.loads(path.read_text())
        draft = config.get("draft") or {}
        sources = [config["source"], *([draft["source"]] if draft.get("source") else [])]
        nim_name = [config["nim_name"]] if config.get("nim_name") else []
        for name in (config["model_id"], *nim_name, *config.get("aliases", [])):
            names[name] = sources
    return names


def gated_sources(model_name: str | None, words: list[str]) -> list[str]:
    """The gated sources a command reaches: its NIM_MODEL_NAME's built-in ones and any hf:// URI among `words`."""
    sources = [*builtin_sources().get(model_name or "", []), *(w.split("=", 1)[-1] for w in words if "hf://" in w)]
    return [source for source in sources if is_gated(source)]
