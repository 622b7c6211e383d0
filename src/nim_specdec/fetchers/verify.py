"""Checking a downloaded tree against the store's listing: names, sizes, and digests where given.

Hashing a large draft takes seconds, so a backend that knows when each file is finished hands it
to the Hasher at once; those files are hashed while the others still download. (Hashing in the
client's writes instead, as the bytes arrive, measured slower on 2 cores: 8 KiB updates on the threads
that also parse HTTP, against one 8 MiB-buffered read per file on a pool of its own.)
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from nim_specdec.errors import MaterializeError
from nim_specdec.fetchers.digests import file_digest


@dataclass(frozen=True)
class RemoteFile:
    name: str  # relative path under the entry's files/ directory
    size: int
    md5: str | None = None  # hex digests the store vouches for, checked when NIM_DOWNLOAD_VERIFY=checksum
    sha256: str | None = None
    crc: tuple[str, str] | None = None  # a full-object CRC the store keeps: (digests.ALGORITHMS name, value)

    def __post_init__(self) -> None:
        # Every backend builds one per listed object, before anything adds the sizes up (the disk pre-flight, the
        # progress total): a negative size would hide another file's bytes from the pre-flight's sum.
        if type(self.size) is not int or self.size < 0:
            raise MaterializeError(
                self.name,
                f"the store lists a size of {self.size!r} for it, not a count of bytes",
                "the listing is wrong: check the object in the store, or the server the URI names",
            )

    @property
    def digest(self) -> tuple[str, str] | None:
        if self.sha256:
            return "sha256", self.sha256
        if self.crc:  # the cheapest to compute, and the only one of a multipart S3 object
            return self.crc
        if self.md5:
            return "md5", self.md5
        return None


class CompletionWriter:
    """A binary file object that reports each write to `on_bytes`, and calls `on_complete` once, with
    the file flushed, when `size` bytes have been written: the moment a client that writes a file
    through it has finished that file, so that the Hasher starts on it while the others download."""

    def __init__(self, fh, size: int, on_bytes, on_complete) -> None:
        self._fh, self._size, self._on_bytes, self._on_complete = fh, size, on_bytes, on_complete
        self._written = 0

    def write(self, data) -> int:
        n = self._fh.write(data)
        self._on_bytes(len(data))
        self._written += len(data)
        if self._on_complete is not None and self._written >= self._size:
            self._fh.flush()
            done, self._on_complete = self._on_complete, None
            done()
        return n

    def __getattr__(self, name):
        return getattr(self._fh, name)


class Hasher:
    """Digests of finished files, computed on a small pool; disabled when checksums are not checked."""

    def __init__(self, dest: Path, enabled: bool, workers: int = 2) -> None:
        self.dest, self.enabled = dest, enabled
        self._pool = ThreadPoolExecutor(max_workers=workers) if enabled else None
        self._futures: dict[str, Future] = {}
        self._lock = threading.Lock()

    def __enter__(self) -> "Hasher":
        return self

    def __exit__(self, *exc) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def file_done(self, f: RemoteFile) -> None:
        """Start hashing `f` now (from any thread); a no-op without checksums or a store digest."""
        if self._pool is None or f.digest is None:
            return
        with self._lock:
            if f.name not in self._futures:
                self._futures[f.name] = self._pool.submit(file_digest, self.dest / f.name, f.digest[0])

    def forget(self, name: str) -> None:
        """Drop `name`'s digest (its file was removed, to be fetched again and hashed anew)."""
        with self._lock:
            self._futures.pop(name, None)

    def results(self, files: list[RemoteFile]) -> dict[str, str]:
        for f in files:
            self.file_done(f)  # the files no backend reported yet
        with self._lock:
            futures = dict(self._futures)
        return {name: future.result() for name, future in futures.items()}


def verify(uri: str, dest: Path, expected: list[RemoteFile], hasher: Hasher) -> None:
    """The downloaded tree must be exactly the listed files, with the listed sizes (and digests)."""
    if not expected:
        raise MaterializeError(uri, "the source holds no files", "check the bucket, prefix or repository name")
    wanted = {f.name: f for f in expected}
    present = {str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file() or p.is_symlink()}
    missing = sorted(set(wanted) - present)
    extra = sorted(present - set(wanted))
    if missing or extra:
        raise MaterializeError(
            uri, f"downloaded tree differs from the listing (missing {missing[:3]}, unexpected {extra[:3]})"
        )
    for f in expected:
        size = (dest / f.name).stat().st_size
        if size != f.size:
            raise MaterializeError(uri, f"{f.name}: size {size} differs from the store's {f.size}")
    if not hasher.enabled:
        return
    digests = hasher.results(expected)
    for f in expected:
        if f.digest is not None and digests.get(f.name) != f.digest[1]:
            raise MaterializeError(uri, f"{f.name}: checksum differs from the store's", "download it again")
