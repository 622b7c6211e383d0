"""NIM_SPECDEC_PREFLIGHT: what a failed pre-flight check does, per category (parsed with the settings).

Unset, the two categories differ on purpose. An incompatible draft never works (vLLM fails after minutes of
loading, or worse, serves with acceptance 1.0), so compatibility stops the launch (`error`). A memory figure is
an estimate, and vLLM's own profiling decides in the end, so memory only warns (`warn`). Set, the variable
applies one mode to every category.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from nim_specdec.config import variables as var
from nim_specdec.errors import ConfigError

ENV_VAR = var.SPECDEC_PREFLIGHT
MODES = var.TABLE[ENV_VAR].choices
COMPATIBILITY, MEMORY = "compatibility", "memory"


@dataclass(frozen=True)
class PreflightModes:
    compatibility: str = "error"
    memory: str = "warn"

    def of(self, category: str) -> str:
        return {COMPATIBILITY: self.compatibility, MEMORY: self.memory}.get(category, "off")

    def as_dict(self) -> dict[str, str]:
        return {COMPATIBILITY: self.compatibility, MEMORY: self.memory}

    @property
    def all_off(self) -> bool:
        return self.compatibility == self.memory == "off"


DEFAULT_MODES = PreflightModes()


def parse_preflight_modes(env: Mapping[str, str]) -> PreflightModes:
    raw = env.get(ENV_VAR, "").strip().lower()
    if not raw:
        return DEFAULT_MODES
    if raw not in MODES:
        raise ConfigError(
            ENV_VAR,
            f"{env[ENV_VAR]!r} is not one of error, warn, off",
            f"set {ENV_VAR} to error, warn or off, or leave it unset for error on compatibility and warn on memory",
        )
    return PreflightModes(raw, raw)
