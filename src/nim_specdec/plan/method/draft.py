"""Which draft checkpoint the speculative config refers to, and where it is materialized.

A bare name in speculative_config.model (one path component) names a workspace subdirectory:
the draft from NIM_DRAFT_MODEL_PATH, or else the built-in draft source, is linked there and the
reference is rewritten to the absolute path. An absolute path is used as it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

from nim_specdec.config import variables as var
from nim_specdec.config.sources import SourceRef, parse_source
from nim_specdec.engines.protocol.engine import Engine
from nim_specdec.errors import ConfigError
from nim_specdec.plan.method.method_choice import DEFAULT_DRAFT_NAME
from nim_specdec.plan.method.target import TARGET_LINK

_BARE = re.compile(r"^[A-Za-z0-9._-]+$")
WHERE = "speculative_config.model"


@dataclass(frozen=True)
class Draft:
    name: str | None  # workspace subdirectory; None when an absolute path is used as it is
    source: SourceRef
    path: str  # what vLLM is given
    chosen_by: str  # which variable or config supplied the source

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "source": self.source.uri, "path": self.path, "chosen_by": self.chosen_by}


def is_bare_name(value: str) -> bool:
    return bool(_BARE.match(value)) and value not in (".", "..")


@dataclass(frozen=True)
class DraftChoice:
    draft: Draft | None  # the draft to materialize
    config: dict[str, Any]  # the speculative config with its model filled in or rewritten (a new dict)
    origin: dict[str, str]
    warnings: tuple[str, ...] = ()


def resolve_draft(
    config: Mapping[str, Any],
    origin: Mapping[str, str],
    draft_source: SourceRef | None,
    builtin_draft: str | None,
    workspace: str,
    engine: Engine,
) -> DraftChoice:
    """The draft the merged config names, and the config with its model filled in or rewritten to the
    draft's workspace path; `config` and `origin` are left as they are."""
    config, origin = dict(config), dict(origin)
    draft, warning = _draft(config, origin, draft_source, builtin_draft, workspace, engine)
    return DraftChoice(draft, config, origin, (warning,) if warning else ())


def _draft(
    config: dict[str, Any],
    origin: dict[str, str],
    draft_source: SourceRef | None,
    builtin_draft: str | None,
    workspace: str,
    engine: Engine,
) -> tuple[Draft | None, str | None]:
    """resolve_draft's choice and its warning, filling in `config` and `origin`, resolve_draft's own copies."""
    method = config.get("method")
    model = config.get("model")
    if model is None and engine.needs_model(method) and draft_source is not None:
        config["model"], origin["model"] = DEFAULT_DRAFT_NAME, var.DRAFT_MODEL_PATH
        model = DEFAULT_DRAFT_NAME
    if model in ("ngram", "[ngram]") or engine.is_custom_proposer(model):
        return None, None  # vLLM reads these as a proposer, not as a draft checkpoint
    if model is None:
        ignored = draft_source is not None
        return None, f"{var.DRAFT_MODEL_PATH} is ignored: method {method!r} uses no draft model" if ignored else None
    if not isinstance(model, str) or not model.strip():
        raise ConfigError(
            WHERE, f"invalid value {model!r}", 'use a bare name such as "eagle3_draft" or an absolute path'
        )
    if "://" in model:
        source = parse_source(model, WHERE)
        config["model"] = f"{workspace}/{DEFAULT_DRAFT_NAME}"
        return Draft(DEFAULT_DRAFT_NAME, source, config["model"], WHERE), None
    if model.startswith("/"):
        ignored = f"{var.DRAFT_MODEL_PATH} is ignored: speculative_config.model is the absolute path {model}"
        return Draft(None, parse_source(model, WHERE), model, WHERE), ignored if draft_source is not None else None
    if not is_bare_name(model):
        raise ConfigError(
            WHERE,
            f"{model!r} is neither a bare name nor an absolute path",
            "use one path component (letters, digits, . _ -) and set NIM_DRAFT_MODEL_PATH to the draft's location",
        )
    if model == TARGET_LINK:
        raise ConfigError(WHERE, f"the name {model!r} is reserved for the target model", "choose another bare name")
    if draft_source is not None:
        source, chosen_by = draft_source, var.DRAFT_MODEL_PATH
    elif builtin_draft is not None:
        source, chosen_by = parse_source(builtin_draft, "built-in draft source"), "builtin"
    else:
        raise ConfigError(
            WHERE,
            f"bare draft name {model!r} has no draft source",
            "set NIM_DRAFT_MODEL_PATH to the draft's location (ngc://, hf://, s3://, gs:// or an absolute directory)",
        )
    path = f"{workspace}/{model}"
    config["model"] = path
    return Draft(model, source, path, chosen_by), None
