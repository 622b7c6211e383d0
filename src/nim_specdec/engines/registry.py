"""Which engine serves, by name: the shell picks one here and hands it to the planner as an Engine."""

from __future__ import annotations

from typing import Callable

from nim_specdec.engines.protocol.engine import Engine, Installation
from nim_specdec.engines.sglang.engine import SglangEngine
from nim_specdec.engines.vllm.engine import VllmEngine

ENGINES: dict[str, Callable[[Installation], Engine]] = {"vllm": VllmEngine, "sglang": SglangEngine}
DEFAULT_ENGINE = "vllm"


def engine_for(installation: Installation, name: str = DEFAULT_ENGINE) -> Engine:
    """The engine `name` over this installation (a name not in ENGINES is the variable's parser's to refuse)."""
    return ENGINES[name](installation)
