"""Guards shared by every fetcher: names that would escape the destination."""

from __future__ import annotations

import os
from pathlib import Path

from nim_specdec.errors import MaterializeError


def relative_name(uri: str, name: str) -> str:
    """Check a remote object's name (relative to the source prefix) and return it normalized.

    Refused: empty names, absolute names, '..' anywhere, backslashes and NUL. A refused name fails
    the whole download, because a model with a file silently left out is not the model asked for.
    """
    rel = "/".join(p for p in name.split("/") if p not in ("", "."))
    problem = ""
    if not rel or name.startswith("/") or "\\" in name or "\x00" in name:
        problem = "absolute or malformed"
    elif ".." in rel.split("/"):
        problem = "escaping"
    if problem:
        raise MaterializeError(
            uri,
            f"refusing {problem} object name {name!r}: it would land outside the download directory",
            "remove or rename that object in the source",
        )
    return rel


def target_path(uri: str, dest: Path, name: str) -> Path:
    """Where `name` goes under `dest`, after relative_name's check and a resolved-path check."""
    rel = relative_name(uri, name)
    path = dest / rel
    root = os.path.realpath(dest)
    if os.path.commonpath([root, os.path.realpath(path)]) != root:
        raise MaterializeError(uri, f"refusing object name {name!r}: it resolves outside the download directory")
    return path


def check_tree(uri: str, dest: Path) -> None:
    """After a download: no link may point outside the tree (SDKs that write links, e.g. a hub cache)."""
    root = os.path.realpath(dest)
    for dirpath, dirnames, filenames in os.walk(dest):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            if os.path.islink(path):
                target = os.path.realpath(path)
                if os.path.commonpath([root, target]) != root:
                    rel = os.path.relpath(path, dest)
                    raise MaterializeError(uri, f"refusing link {rel!r}: it points outside the download directory")
