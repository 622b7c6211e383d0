"""The built-in speculative-decoding configs shipped in configs/builtin_specdec/.

One JSON file per supported model: its id and aliases, where its weights come from, its
default speculative_config and, for EAGLE3, where the published draft lives. Loading reads a
directory (shell); lookup is pure.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from nim_specdec.config import variables as var
from nim_specdec.errors import ConfigError
from nim_specdec.files.regular_file import read_json_inside


@dataclass(frozen=True)
class BuiltinEntry:
    model_id: str
    aliases: tuple[str, ...]
    source: str
    speculative_config: dict[str, Any]
    draft_source: str | None = None
    draft_published_at: str | None = None
    file: str = ""
    nim_name: str | None = None  # the name NIM for LLMs serves this model under (meta/llama-3.1-8b-instruct)
    evidence: str | None = None  # DFlash/DSpark: the published measurement that puts the head ahead of the guide's pick

    @property
    def method(self) -> str | None:
        return self.speculative_config.get("method")

    def names(self) -> tuple[str, ...]:
        return (self.model_id, *((self.nim_name,) if self.nim_name else ()), *self.aliases)

    def served_names(self) -> list[str]:
        """The names a client may ask for: NIM's first (a client written for that NIM asks for it), then the
        repository id."""
        return [name for name in (self.nim_name, self.model_id) if name]


def _field(data: dict[str, Any], key: str, kind: type, optional: bool = False) -> Any:
    value = data.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, kind) or isinstance(value, bool):
        raise TypeError(f"{key} is {type(value).__name__}, not {kind.__name__}")
    return value


def entry_from_json(data: Any, file: str) -> BuiltinEntry:
    """An entry from a file's JSON; TypeError naming the field when one has the wrong type."""
    if not isinstance(data, dict):
        raise TypeError("the file is not a JSON object")
    draft = _field(data, "draft", dict, optional=True) or {}
    aliases = _field(data, "aliases", list, optional=True) or []
    if not all(isinstance(a, str) for a in aliases):
        raise TypeError("aliases is not a list of strings")
    return BuiltinEntry(
        model_id=_field(data, "model_id", str),
        aliases=tuple(aliases),
        source=_field(data, "source", str),
        speculative_config=dict(_field(data, "speculative_config", dict)),
        draft_source=_field(draft, "source", str, optional=True),
        draft_published_at=_field(draft, "published_at", str, optional=True),
        file=file,
        nim_name=_field(data, "nim_name", str, optional=True),
        evidence=_field(data, "evidence", str, optional=True),
    )


def default_config_dir() -> Path:
    """Installed wheels carry the configs inside the package; a source checkout has them at the root."""
    package = Path(__file__).resolve().parents[2]
    packaged = package / "builtin_specdec"
    if packaged.is_dir():
        return packaged
    return package.parents[1] / "configs" / "builtin_specdec"


_FIX = "reinstall nim-specdec, or point NIM_BUILTIN_CONFIG_DIR at a folder of built-in configs"
# A built-in config is a few hundred bytes.
MAX_BUILTIN_BYTES = 1024 * 1024


def load_registry(directory: Path) -> tuple[BuiltinEntry, ...]:
    """Every `*.json` in `directory`, each a regular file inside it (a link out of the folder is refused)
    and parsed strictly; a problem names the file, never what it holds. A folder that does not exist is
    refused: a typo in NIM_BUILTIN_CONFIG_DIR would otherwise serve with no built-in configs at all."""
    entries = []
    try:
        if not directory.is_dir():
            raise OSError(2, "is not an existing folder")
        paths = sorted(directory.glob("*.json"))
    except OSError as err:
        raise ConfigError(
            var.BUILTIN_CONFIG_DIR, f"{directory} cannot be listed ({err.strerror})", "use an existing directory"
        ) from None
    for path in paths:
        where = f"built-in config {path.name}"
        data = read_json_inside(path, directory, MAX_BUILTIN_BYTES, ConfigError, where, fix=_FIX)
        try:
            entries.append(entry_from_json(data, path.name))
        except (ValueError, TypeError) as err:
            raise ConfigError(where, f"cannot be read ({err})", _FIX) from None
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
    raise ConfigError(var.MODEL_NAME, f"unknown model {name!r} (built-in: {', '.join(known) or 'none'})", fix)
