"""What the launcher knows of the pinned vLLM's command line and SpeculativeConfig, read from
vllm_schema.json (written from the installed vLLM by scripts/vllm_schema_gen.py and compared with
it by the schema-drift test), so that no vLLM import is needed on the fast path."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

WHOLE = "--speculative-config"


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    return json.loads(resources.files("nim_specdec.config").joinpath("vllm_schema.json").read_text())


def normalise_flag(flag: str) -> str:
    """vLLM's parser turns underscores into dashes in a long option's name, up to the first dot."""
    if not flag.startswith("--"):
        return flag
    head, dot, tail = flag[2:].partition(".")
    return "--" + head.replace("_", "-") + dot + tail


def resolve_option(flag: str) -> str | None:
    """The vLLM option a flag (without its value) means: exact, or a unique prefix of a long option
    (argparse accepts abbreviations); None when vLLM has no such option or the prefix is ambiguous."""
    flag = normalise_flag(flag)
    options = schema()["options"]
    if flag in options:
        return flag
    if not flag.startswith("--") or len(flag) < 3:
        return None
    matches = [o for o in options if o.startswith(flag) and o.startswith("--")]
    return matches[0] if len(matches) == 1 else None


def option_dest(flag: str) -> str | None:
    """The argument an option sets (-tp -> tensor_parallel_size), None when vLLM has no such option."""
    option = resolve_option(flag)
    return schema()["options"][option] if option else None


def speculative_role(flag: str) -> tuple[str, str] | None:
    """("whole", option) for --speculative-config and its aliases, ("field", key) for options such as
    --spec-method that fill one speculative_config key, None for any other option."""
    option = resolve_option(flag)
    if option is None:
        return None
    if option in schema()["speculative_options"]:
        return "whole", option
    field = schema()["speculative_single_options"].get(option)
    return ("field", field) if field else None
