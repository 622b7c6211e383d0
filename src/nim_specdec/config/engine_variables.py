"""The NIM variables that set engine arguments below NIM_SPECDEC_ARGS (the port, the served name, the context
length, and every row that maps to one engine argument), as the settings read them and the planner layers them
(plan.merge.engine_layers)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nim_specdec.config.table_reader import table_fields

SECTION = "engine_variables"  # the rows whose field is "engine_variables.NAME"


@dataclass(frozen=True)
@table_fields(SECTION)
class EngineVariables:
    port: int
    served_model_name: str | None
    max_model_len: int | None
    # (NIM variable, engine argument, value) for the rows set that map to one engine argument and have no field.
    one_argument: tuple[tuple[str, str, Any], ...] = ()
    port_given: bool = False  # NIM_SERVER_PORT set (the plan names it as the port's origin)
