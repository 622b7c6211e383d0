"""Guards shared by every fetcher: names that would escape the destination, and listings without end."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Iterable, Iterator, TypeVar

from nim_specdec.errors import MaterializeError

T = TypeVar("T")


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


# Linux's limits: a longer name fails in open(2) with ENAMETOOLONG, which says nothing of the object.
NAME_MAX = 255
PATH_MAX = 4096


def target_path(uri: str, dest: Path, name: str) -> Path:
    """Where `name` goes under `dest`, after relative_name's check, the file-name limits and a resolved-path
    check."""
    rel = relative_name(uri, name)
    path = dest / rel
    long = next((part for part in rel.split("/") if len(os.fsencode(part)) > NAME_MAX), None)
    if long is not None or len(os.fsencode(str(path))) >= PATH_MAX:
        what = f"a part longer than {NAME_MAX} bytes" if long is not None else f"a path of {PATH_MAX} bytes or more"
        raise MaterializeError(
            uri,
            f"refusing object name {name[:120]!r}...: it has {what}, which no Linux file system stores",
            "rename that object in the source, or set NIM_CACHE_PATH to a shorter path",
        )
    root = os.path.realpath(dest)
    if os.path.commonpath([root, os.path.realpath(path)]) != root:
        raise MaterializeError(uri, f"refusing object name {name!r}: it resolves outside the download directory")
    return path


def check_clashes(uri: str, names: list[str]) -> None:
    """An object store may hold both `a` and `a/b`; a file system cannot (a is a file or a folder)."""
    files = set(names)
    for name in names:
        parts = name.split("/")
        for i in range(1, len(parts)):
            folder = "/".join(parts[:i])
            if folder in files:
                shown = repr(folder[:120])
                raise MaterializeError(
                    uri,
                    f"objects {shown} and {name[:120]!r} clash: {shown} would be both a file and a folder",
                    "remove or rename one of them in the source",
                )


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

    def counted(self, items: Iterable[T]) -> Iterator[T]:
        """`items` as the store lists them, each one `step`."""
        for item in items:
            self.step()
            yield item
