"""Making the target and the draft available where the plan says: fetch, then link into the
workspace. A link is replaced atomically, so a concurrent launcher never sees a missing path.

The workspace may sit on a volume others can write, so it follows the cache's `sources/` rule: it is
created owner-only and refused when another user owns it or can write it. Under NIM_CACHE_PATH the
volume's rule applies too, whatever the source of the draft (a local one included): the folders on the
way are judged as the cache's are (files/volume.py), since vLLM is handed the link by path.
Inside it an existing link is replaced only when it is ours: made by this UID and naming our cache, or
already where we want it, or where the launcher's own record beside it says a start of ours linked it (a
local draft changed between two starts). A link is read with readlink, never resolved, so a link another
user planted further along is not followed.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

from nim_specdec.config import variables as var
from nim_specdec.config.sources import SourceRef
from nim_specdec.errors import MaterializeError
from nim_specdec.fetchers.download.base import FetchContext
from nim_specdec.fetchers.registry import get_fetcher
from nim_specdec.fetchers.volume.cache import CacheLayout
from nim_specdec.files.trust import (
    ensure_own_dir,
    make_dirs,
    read_own_file,
    refuse_open_to_others,
    refuse_system_dir,
    vouches,
    write_replacing,
)
from nim_specdec.files.writable import unwritable_reason


def fetch(ref: SourceRef, ctx: FetchContext) -> Path:
    return Path(get_fetcher(ref.scheme).fetch(ref, ctx))


def fetch_with_reason(ref: SourceRef, ctx: FetchContext) -> tuple[Path, str | None]:
    """The files, and (hf://) why they are the commit they are; None where a source has no commits."""
    fetcher = get_fetcher(ref.scheme)
    explained = getattr(fetcher, "fetch_with_reason", None)
    if explained is None:
        return Path(fetcher.fetch(ref, ctx)), None
    path, reason = explained(ref, ctx)
    return Path(path), reason


def _inside(path: str, root: str) -> bool:
    return os.path.commonpath([path, root]) == root


RECORD_LIMIT = 8192  # a path, as os.readlink gives it


def record_path(link_path: Path) -> Path:
    """Where the launcher writes what it linked at `link_path`: a hidden file beside it, owner-only."""
    return link_path.with_name(f".{link_path.name}.nim-link")


def recorded_target(link_path: Path, vouched: Path | None = None) -> str | None:
    """The target a start of this launcher linked at `link_path`, from its record (a regular file of ours,
    never a link); None when there is none to trust."""
    data = read_own_file(record_path(link_path), RECORD_LIMIT, vouches(vouched, link_path))
    try:
        return data.decode() if data else None
    except UnicodeDecodeError:
        return None


def foreign_link_reason(link_path: Path, target: str, cache_dir: Path, vouched: Path | None = None) -> str | None:
    """Why the thing at `link_path` must not be replaced, or None (absent, or a link of ours)."""
    try:
        st = os.lstat(link_path)
    except FileNotFoundError:
        return None
    if not stat.S_ISLNK(st.st_mode):
        return "exists in the workspace and is not a link"
    if st.st_uid != os.geteuid() and not vouches(vouched, link_path):
        return f"is a link made by uid {st.st_uid}, not by this launcher's uid {os.geteuid()}"
    current = os.path.normpath(os.path.join(link_path.parent, os.readlink(link_path)))
    entries = os.path.realpath(CacheLayout.under(cache_dir).root / "entries")
    if current == target or _inside(current, entries) or current == recorded_target(link_path, vouched):
        return None
    return f"is a link to {current}, which is not in this launcher's cache nor one it made"


def ensure_workspace(workspace: Path, cache_dir: Path, vouched: Path | None = None) -> None:
    """The workspace folder, created owner-only (with any missing parent); refused if another user owns or can
    write it, or, when it lies under the cache `cache_dir`, if the cache volume is refused (`vouched`: the
    folder the platform vouches for, NIM_CACHE_TRUST_SHARED)."""
    refuse_system_dir(workspace, var.WORKSPACE)
    if vouches(cache_dir, workspace):
        refuse_open_to_others(workspace, var.WORKSPACE, var.CACHE_TRUST_SHARED, vouched)
    try:
        make_dirs(workspace.parent)
    except OSError as err:
        raise MaterializeError(
            var.WORKSPACE,
            f"cannot create {workspace.parent} ({err.strerror})",
            "make NIM_WORKSPACE (or NIM_CACHE_PATH) writable",
        ) from None
    ensure_own_dir(workspace, var.WORKSPACE, vouches(vouched, workspace))


def refuse_foreign_link(link_path: Path, target: str, cache_dir: Path, vouched: Path | None = None) -> None:
    """MaterializeError (exit 3) when the thing at `link_path` must not be replaced by a link to `target`."""
    reason = foreign_link_reason(link_path, target, cache_dir, vouched)
    if reason:
        raise MaterializeError(str(link_path), reason, "remove it, or choose another workspace or bare draft name")


def link(source_dir: Path, link_path: Path, cache_dir: Path, vouched: Path | None = None) -> None:
    ensure_workspace(link_path.parent, cache_dir, vouched)
    target = os.path.realpath(source_dir)
    refuse_foreign_link(link_path, target, cache_dir, vouched)
    unwritable = unwritable_reason(link_path.parent)
    if unwritable:
        raise MaterializeError(var.WORKSPACE, *unwritable)
    try:
        tmp = link_path.with_name(f".{link_path.name}.{secrets.token_hex(6)}.tmp")
        os.symlink(target, tmp, target_is_directory=True)  # fails rather than reuse anything already there
        os.replace(tmp, link_path)
        # After the link: an interruption between the two leaves the previous record, which at worst refuses
        # the next start's different draft, never vouches for a link this launcher did not make.
        write_replacing(record_path(link_path), target.encode())
    except OSError as err:
        raise MaterializeError(
            str(link_path),
            f"cannot link the model into the workspace ({err.strerror})",
            "make NIM_WORKSPACE (or NIM_CACHE_PATH) writable",
        ) from None
