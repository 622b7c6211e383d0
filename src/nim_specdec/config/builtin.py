"""The built-in speculative-decoding configs shipped in configs/builtin_specdec/.

One JSON file per supported model: its id and aliases, where its weights come from, its
default speculative_config and, for EAGLE3, where the published draft lives. Loading reads a
directory (shell); lookup is pure.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from nim_specdec.errors import ConfigError


@dataclass(frozen=True)
class BuiltinEntry:
    model_id: str
    aliases: tuple[str, ...]
    source: str
    speculative_config: dict[str, Any]
    draft_source: str | None = None
    draft_published_at: str | None = None
    file: str = ""

    @property
    def method(self) -> str | None:
        return self.speculative_config.get("method")

    def names(self) -> tuple[str, ...]:
        return (self.model_id, *self.aliases)


def entry_from_json(data: dict[str, Any], file: str) -> BuiltinEntry:
    draft = data.get("draft") or {}
    return BuiltinEntry(
        model_id=data["model_id"],
        aliases=tuple(data.get("aliases", ())),
        source=data["source"],
        speculative_config=dict(data["speculative_config"]),
        draft_source=draft.get("source"),
        draft_published_at=draft.get("published_at"),
        file=file,
    )


def default_config_dir() -> Path:
    """Installed wheels carry the configs inside the package; a source checkout has them at the root."""
    package = Path(__file__).resolve().parents[1]
    packaged = package / "builtin_specdec"
    if packaged.is_dir():
        return packaged
    return package.parents[1] / "configs" / "builtin_specdec"


def load_registry(directory: Path) -> tuple[BuiltinEntry, ...]:
    entries = []
    for path in sorted(directory.glob("*.json")):
        try:
            entries.append(entry_from_json(json.loads(path.read_text()), path.name))
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise ConfigError(f"built-in config {path.name}", f"cannot be read ({err})", "reinstall nim-specdec") from None
    return tuple(entries)


def _key(name: str) -> str:
    return name.strip().lower()


def find(registry: Iterable[BuiltinEntry], candidates: Iterable[str]) -> BuiltinEntry | None:
    """First entry whose id, alias, or id's last component matches a candidate name (case-insensitive)."""
    index: dict[str, BuiltinEntry] = {}
    for entry in registry:
        for name in entry.names():
            index.setdefault(_key(name), entry)
        index.setdefault(_key(entry.model_id.rsplit("/", 1)[-1]), entry)
    for candidate in candidates:
        if candidate and _key(candidate) in index:
            return index[_key(candidate)]
    return None


def require(registry: tuple[BuiltinEntry, ...], name: str) -> BuiltinEntry:
    entry = find(registry, [name])
    if entry is not None:
        return entry
    known = sorted(e.model_id for e in registry)
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.5)
    fix = f"did you mean {close[0]!r}?" if close else "use NIM_MODEL_PATH to serve any model"
    raise ConfigError("NIM_MODEL_NAME", f"unknown model {name!r} (built-in: {', '.join(known) or 'none'})", fix)
