"""What the user asks of speculation: NIM_SPECDEC_ENABLE, NIM_SPECDEC_ARGS and NIM_DRAFT_MODEL_PATH, one value the
settings hold and the planner reads as it is."""

from __future__ import annotations

from dataclasses import dataclass, field

from nim_specdec.config.sources import SourceRef
from nim_specdec.config.specdec_args import SpecdecArgs
from nim_specdec.config.table_reader import table_fields

SECTION = "speculation"  # the rows whose field is "speculation.NAME"


@dataclass(frozen=True)
@table_fields(SECTION)
class SpeculationRequest:
    enable: bool
    specdec_args: str | None  # raw JSON as set (tune rewrites its engine keys); parsed: `specdec` below
    draft_source: SourceRef | None
    # NIM_SPECDEC_ARGS parsed (config.specdec_args); None when unset, blank, or NIM_SPECDEC_ENABLE is off.
    specdec: SpecdecArgs | None = field(default=None, compare=False)

    @property
    def args_set(self) -> bool:
        """NIM_SPECDEC_ARGS set (not blank): a warning says so when speculation is off."""
        return self.specdec_args is not None
