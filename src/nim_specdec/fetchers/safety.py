"""Guards shared by every fetcher: names that would escape the destination, and listings without end."""

from __future__ import annotations

import os
import time
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


# A model is a few hundred files at most; a store that lists more, or keeps paging, is not serving one.
MAX_LISTED = 100_000
# The listing's overall deadline, in units of NIM_DOWNLOAD_TIMEOUT (which bounds each request).
LISTING_TIMEOUTS = 20


class ListingBudget:
    """Bounds a store's listing (files and pages) in count and in time; `step` is called once per item or page."""

    def __init__(self, uri: str, timeout: float) -> None:
        self.uri, self.count = uri, 0
        self.seconds = max(60.0, LISTING_TIMEOUTS * timeout)
        self.deadline = time.monotonic() + self.seconds

    def step(self) -> None:
        self.count += 1
        if self.count > MAX_LISTED:
            raise MaterializeError(
                self.uri, f"the store lists more than {MAX_LISTED} files or pages", "point at the model's own folder"
            )
        if time.monotonic() > self.deadline:
            raise MaterializeError(
                self.uri,
                f"listing the files took more than {self.seconds:.0f} s",
                "check the endpoint; NIM_DOWNLOAD_TIMEOUT scales this limit",
            )
