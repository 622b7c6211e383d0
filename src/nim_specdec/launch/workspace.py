"""Making the target and the draft available where the plan says: fetch, then link into the
workspace. A link is replaced atomically, so a concurrent launcher never sees a missing path."""

from __future__ import annotations

import os
from pathlib import Path

from nim_specdec.errors import MaterializeError
from nim_specdec.fetchers.base import FetchContext
from nim_specdec.fetchers.registry import get_fetcher
from nim_specdec.config.sources import SourceRef


def fetch(ref: SourceRef, ctx: FetchContext) -> Path:
    return Path(get_fetcher(ref.scheme).fetch(ref, ctx))


def link(source_dir: Path, link_path: Path) -> None:
    if link_path.exists() and not link_path.is_symlink():
        raise MaterializeError(
            str(link_path), "exists in the workspace and is not a link", "remove it or choose another bare draft name"
        )
    try:
        link_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = link_path.with_name(f".{link_path.name}.{os.getpid()}.tmp")
        if tmp.is_symlink():
            tmp.unlink()
        tmp.symlink_to(source_dir.resolve(), target_is_directory=True)
        os.replace(tmp, link_path)
    except OSError as err:
        raise MaterializeError(
            str(link_path), f"cannot link the model into the workspace ({err.strerror})",
            "make NIM_WORKSPACE (or NIM_CACHE_PATH) writable",
        ) from None
