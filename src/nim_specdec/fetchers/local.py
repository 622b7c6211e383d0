"""Local directories: used where they are, never copied."""

from __future__ import annotations

from pathlib import Path

from nim_specdec.config.sources import SourceRef
from nim_specdec.errors import MaterializeError
from nim_specdec.fetchers.download.base import FetchContext


class LocalFetcher:
    def cached(self, ref: SourceRef, ctx: FetchContext) -> Path | None:
        path = Path(ref.location)
        return path if path.is_dir() else None

    def fetch(self, ref: SourceRef, ctx: FetchContext) -> Path:
        path = Path(ref.location)
        if not path.exists():
            raise MaterializeError(ref.uri, "directory does not exist", "mount it into the container at that path")
        if not path.is_dir():
            raise MaterializeError(ref.uri, "is a file, not a directory", "point at the directory holding config.json")
        return path
