"""What the user asks to serve: NIM_MODEL_PATH (model-free mode), else NIM_MODEL_NAME (a built-in entry), and the
vLLM arguments of NIM_PASSTHROUGH_ARGS, which may name a model before either (plan.method.target)."""

from __future__ import annotations

from dataclasses import dataclass

from nim_specdec.config.sources import SourceRef
from nim_specdec.config.table_reader import table_fields

SECTION = "target"  # the rows whose field is "target.NAME"


@dataclass(frozen=True)
@table_fields(SECTION)
class TargetRequest:
    model_source: SourceRef | None
    model_name: str | None
    passthrough_args: tuple[str, ...]
