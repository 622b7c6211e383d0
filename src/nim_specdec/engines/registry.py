"""Which engine serves, by name: the shell picks one here and hands it to the planner as an Engine; and, once it
serves, what the shell reads of it (engines.protocol.serving), by name or by the counters a scrape holds."""

from __future__ import annotations

import importlib
from typing import Any, Callable, Iterator, Mapping

from nim_specdec.engines.protocol.engine import Engine, Installation
from nim_specdec.engines.protocol.serving import CounterReader, Serving


class _OnUse(Mapping[str, Any]):
    """Name -> the object at "module:attribute", imported when first asked for: a start imports the engine it
    serves with, never the others."""

    def __init__(self, paths: Mapping[str, str]) -> None:
        self._paths = dict(paths)

    def __getitem__(self, name: str) -> Any:
        module, _, attribute = self._paths[name].partition(":")
        return getattr(importlib.import_module(module), attribute)

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)


ENGINES: Mapping[str, Callable[[Installation], Engine]] = _OnUse(
    {"vllm": "nim_specdec.engines.vllm.engine:VllmEngine", "sglang": "nim_specdec.engines.sglang.engine:SglangEngine"}
)
DEFAULT_ENGINE = "vllm"
SERVING: Mapping[str, Serving] = _OnUse(
    {
        "vllm": "nim_specdec.engines.vllm.observe.spec_counters:SERVING",
        "sglang": "nim_specdec.engines.sglang.counters:SERVING",
    }
)


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
