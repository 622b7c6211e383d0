"""Where the launcher keeps files: NIM_CACHE_PATH (downloads, start-up caches) and NIM_WORKSPACE (the target and
drafts linked under their bare names), each an absolute directory."""

from __future__ import annotations

from dataclasses import dataclass

from nim_specdec.config.table_reader import table_fields


@dataclass(frozen=True)
@table_fields("locations")  # the rows whose field is "locations.NAME"
class Locations:
    cache_path: str
    workspace: str
