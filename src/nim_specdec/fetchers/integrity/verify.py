"""Checking a downloaded tree against the store's listing: names, sizes, and digests where given.

Hashing a large draft takes seconds, so every backend has the Hasher follow the files while its client
writes them (fetchers/integrity/write_follower.py: the bytes read back from the page cache right behind the client,
on a pool of one thread per core), and tells it when a file is whole where the client says so. (Hashing
in the client's own writes instead measured slower on 2 cores: 8 KiB updates on the threads that also
parse HTTP.)
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from nim_specdec.errors import MaterializeError
from nim_specdec.fetchers.integrity.digests import file_digest
from nim_specdec.fetchers.integrity.write_follower import Partials, WriteFollower


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
    """Digests of the listed files: followed while the client writes them (`follow`, integrity/write_follower.py),
    else read from the disk once whole, on a pool of one thread per core; disabled when checksums are not checked."""

    def __init__(self, dest: Path, enabled: bool, workers: int | None = None) -> None:
        self.dest, self.enabled = dest, enabled
        self.workers = workers or max(2, os.cpu_count() or 2)
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="hash") if enabled else None
        self._futures: dict[str, Future] = {}
        self._follower: WriteFollower | None = None
        self._lock = threading.Lock()
        self.from_disk: list[str] = []  # the files whose digest was read back once whole (not followed)

    def __enter__(self) -> "Hasher":
        return self

    def __exit__(self, *exc) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        if self._follower is not None:
            self._follower.close()

    @property
    def streamed(self) -> int:
        """Bytes digested while the client wrote them."""
        return self._follower.streamed if self._follower is not None else 0

    @property
    def found_partial(self) -> set[str]:
        """The files the follower found under their client's temporary name (before it renamed them)."""
        return set(self._follower.found_partial) if self._follower is not None else set()

    def follow(self, files: list[RemoteFile], partials: Partials) -> None:
        """Digest `files` while the client writes them; `partials`: where the client writes a file before it
        is whole (write_follower's in_place, s5cmd_partials, ...). Call before the transfer starts."""
        if self._pool is None or all(f.digest is None for f in files):
            return  # nothing to digest (ngc:// lists no digests): no follower runs
        with self._lock:
            if self._follower is None:
                self._follower = WriteFollower(self.dest, partials, self.workers)
            follower = self._follower
        for f in files:
            if f.digest is not None and f.name not in self._futures:
                follower.follow(f.name, f.digest[0])

    def file_done(self, f: RemoteFile) -> None:
        """`f` is whole at its final name (from any thread): finish its digest now; a no-op without
        checksums or a store digest."""
        if self._pool is None or f.digest is None:
            return
        with self._lock:
            if f.name not in self._futures:
                self._futures[f.name] = self._pool.submit(self._digest, f.name, f.digest[0])

    def _digest(self, name: str, algorithm: str) -> str:
        followed = self._follower.finish(name) if self._follower is not None else None
        if followed is not None:
            return followed
        with self._lock:
            self.from_disk.append(name)
        return file_digest(self.dest / name, algorithm)

    def confirmed(self, f: RemoteFile, digest: str | None) -> str | None:
        """`digest` if it is the store's; otherwise the file's digest read again from the disk, so that a
        follower's read that raced a write never refuses a good file."""
        if f.digest is None or digest == f.digest[1]:
            return digest
        with self._lock:
            self.from_disk.append(f.name)
        return file_digest(self.dest / f.name, f.digest[0])

    def forget(self, name: str) -> None:
        """Drop `name`'s digest (its file was removed, to be fetched again and hashed anew)."""
        with self._lock:
            self._futures.pop(name, None)
        if self._follower is not None:
            self._follower.forget(name)

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
        if f.digest is not None and hasher.confirmed(f, digests.get(f.name)) != f.digest[1]:
            raise MaterializeError(uri, f"{f.name}: checksum differs from the store's", "download it again")
