"""Which engine serves, by name: the shell picks one here and hands it to the planner as an Engine; and, once it
serves, what the shell reads of it (engines.protocol.serving), by name or by the counters a scrape holds."""

from __future__ import annotations

from typing import Callable

from nim_specdec.engines.protocol.engine import Engine, Installation
from nim_specdec.engines.protocol.serving import CounterReader, Serving
from nim_specdec.engines.sglang.counters import SERVING as SGLANG_SERVING
from nim_specdec.engines.sglang.engine import SglangEngine
from nim_specdec.engines.vllm.engine import VllmEngine
from nim_specdec.engines.vllm.observe.spec_counters import SERVING as VLLM_SERVING

ENGINES: dict[str, Callable[[Installation], Engine]] = {"vllm": VllmEngine, "sglang": SglangEngine}
DEFAULT_ENGINE = "vllm"
SERVING: dict[str, Serving] = {serving.name: serving for serving in (VLLM_SERVING, SGLANG_SERVING)}


def engine_for(installation: Installation, name: str = DEFAULT_ENGINE) -> Engine:
    """The engine `name` over this installation (a name not in ENGINES is the variable's parser's to refuse)."""
    return ENGINES[name](installation)


def serving_for(name: str = DEFAULT_ENGINE) -> Serving:
    return SERVING[name]


def counters_in(text: str) -> CounterReader:
    """The reader of whichever engine's speculation counters a scrape holds; the default engine's where it holds
    none (its reader then says what is missing)."""
    default = SERVING[DEFAULT_ENGINE]
    ordered = [*(serving for serving in SERVING.values() if serving is not default), default]
    return next((serving for serving in ordered if serving.counters.holds(text)), default).counters
