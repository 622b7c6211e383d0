"""Digesting a file while its client writes it: the bytes are read back right behind the client, from the page
cache that still holds them, so that a verified download ends within a few percent of its transfer.

Every client writes into the attempt's private folder, in its own way: s5cmd and s3transfer write ranged parts out
of order into a temporary sibling that they rename when it is whole, huggingface_hub appends to an `.incomplete`
file under its `.cache` folder, our gs:// writer appends under the final name. One mechanism reads them all: a
poll finds the file under the names the client uses (`Partials`), opens it once (the descriptor follows the inode
across the rename), and a pool of threads, one per core, digests each file's settled prefix: the bytes from the
last position to the first hole (SEEK_HOLE; parts written out of order leave holes), less a margin before a hole
where a part is still being copied in. The last bytes are read when the client says the file is whole, or when it
has renamed it to its final name.

The digest so made is bound to the file that is served: it is kept only if the final name is the inode that was
followed (otherwise the file is hashed anew from its first byte), and a digest that differs from the store's is
computed again from the disk before the file is refused (`Hasher.confirmed`), so a read that raced a write can
delay a download but never fail or pass one. Every client here writes each byte once, except a part it retries
after a dropped connection, which it asks for with the same version (If-Match for s3transfer, the generation for
google-cloud-storage, an append for huggingface_hub).
"""

from __future__ import annotations

import os
import re
import stat
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from nim_specdec.fetchers.integrity.digests import ALGORITHMS, Digest

# A folder and a pattern of the names a client writes a file under before it is whole (besides its final name).
Partials = Callable[[Path, str], list[tuple[Path, "re.Pattern[str]"]]]

POLL_S = 0.02
READ = 4 * 1024 * 1024  # one read, into a buffer of each pool thread
STEP = 64 * 1024 * 1024  # the most one turn digests, so that parallel files take turns on the pool
# Bytes left before a hole until the file is whole: a client's write in progress may have allocated pages
# there that it has not yet filled. Read at the end, from the page cache.
MARGIN = 1024 * 1024
MAX_OPEN = 256  # files followed at once: beyond it a file is hashed when it is whole


def in_place(dest: Path, name: str) -> list[tuple[Path, re.Pattern[str]]]:
    """A client that writes each file under its final name (our gs:// writer, ngcsdk)."""
    return []


def s5cmd_partials(dest: Path, name: str) -> list[tuple[Path, re.Pattern[str]]]:
    """s5cmd: Go's os.CreateTemp(folder, name + "*"), a decimal suffix."""
    path = dest / name
    return [(path.parent, re.compile(re.escape(path.name) + r"[0-9]+"))]


def s3transfer_partials(dest: Path, name: str) -> list[tuple[Path, re.Pattern[str]]]:
    """boto3's transfer manager: name + "." + 8 hex digits (s3transfer.utils.random_file_extension)."""
    path = dest / name
    return [(path.parent, re.compile(re.escape(path.name) + r"\.[0-9a-fA-F]{8}"))]


@dataclass(eq=False)
class _Followed:
    """One inode being digested from its first byte; `path` is the name it was found under."""

    fd: int
    inode: tuple[int, int]
    path: Path
    digest: Digest
    partial: bool  # found under a temporary name: renamed to the final one, it is whole
    pos: int = 0
    seen: tuple[int, int, int] = (-1, -1, -1)  # (size, blocks, ctime) at its last turn: a turn only on a change
    lock: threading.Lock = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        self.lock = threading.Lock()

    def settled_end(self) -> int:
        """The end of the bytes the client has finished writing from `pos` on."""
        size = os.fstat(self.fd).st_size
        if self.pos >= size:
            return self.pos
        try:
            data_end = os.lseek(self.fd, self.pos, os.SEEK_HOLE)
        except OSError:  # no SEEK_HOLE on this filesystem: the size decides (a hole then fails the digest)
            return size
        return data_end - MARGIN if data_end < size else data_end

    def advance(self, end: int, buffer: bytearray, limit: int) -> int:
        """Digest the bytes from pos up to `end`, at most `limit` of them; returns how many."""
        view, done = memoryview(buffer), 0
        while self.pos < end and done < limit:
            n = os.preadv(self.fd, [view[: min(len(buffer), end - self.pos)]], self.pos)
            if n <= 0:
                break
            self.digest.update(view[:n])
            self.pos += n
            done += n
        return done


class WriteFollower:
    """Follows the listed files under `dest` while a client writes them (see the module's docstring).

    `follow(name, algorithm)` before the transfer; `finish(name)` when the file is whole at its final name
    gives its digest, or None when it must be hashed from the disk (never found, another inode, an error)."""

    def __init__(self, dest: Path, partials: Partials, workers: int) -> None:
        self.dest, self._partials = dest, partials
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="digest")
        self._wanted: dict[str, str] = {}  # name -> algorithm, not yet found
        self._followed: dict[str, list[_Followed]] = {}
        self._results: dict[str, str] = {}  # digests of files the client renamed to their final name
        self._busy: set[int] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._buffers = threading.local()
        self.streamed = 0  # bytes digested while the client wrote them (before `finish`)
        self.found_partial: set[str] = set()  # the files found under a client's temporary name
        self._thread = threading.Thread(target=self._run, name="digest-follower", daemon=True)
        self._thread.start()

    def follow(self, name: str, algorithm: str) -> None:
        with self._lock:
            if name not in self._followed and name not in self._results:
                self._wanted[name] = algorithm

    def forget(self, name: str) -> None:
        with self._lock:
            self._wanted.pop(name, None)
            self._results.pop(name, None)
            dropped = self._followed.pop(name, [])
        for f in dropped:
            with f.lock:
                _close(f)

    def finish(self, name: str) -> str | None:
        """The digest of `name`, now whole at its final name, if a follower read that very inode."""
        with self._lock:
            self._wanted.pop(name, None)
            done = self._results.pop(name, None)
            candidates = self._followed.pop(name, [])
        try:
            if done is not None:
                return done
            try:
                st = os.lstat(self.dest / name)
            except OSError:
                return None
            if not stat.S_ISREG(st.st_mode):
                return None
            for f in candidates:
                if f.inode == (st.st_dev, st.st_ino):
                    with f.lock:
                        if f.fd < 0:
                            return None
                        f.advance(st.st_size, self._buffer(), st.st_size)
                        return f.digest.result() if f.pos == st.st_size else None
            return None
        finally:
            for f in candidates:
                with f.lock:
                    _close(f)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self._pool.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            followed = [f for fs in self._followed.values() for f in fs]
            self._followed.clear()
        for f in followed:
            with f.lock:
                _close(f)

    def _buffer(self) -> bytearray:
        buffer = getattr(self._buffers, "buffer", None)
        if buffer is None:
            buffer = self._buffers.buffer = bytearray(READ)
        return buffer

    def _run(self) -> None:
        while not self._stop.wait(POLL_S):
            self._discover()
            with self._lock:
                idle = [(n, f) for n, fs in self._followed.items() for f in fs if id(f) not in self._busy]
            idle = [(n, f) for n, f in idle if self._grew(f)]
            with self._lock:
                self._busy.update(id(f) for _, f in idle)
            for name, f in idle:
                try:
                    self._pool.submit(self._turn, name, f)
                except RuntimeError:  # the pool is shut down: closing
                    return

    @staticmethod
    def _grew(f: _Followed) -> bool:
        """Whether the client wrote to `f` or renamed it (a rename changes its ctime) since its last turn, so
        that a file that did not change costs no turn."""
        try:
            st = os.fstat(f.fd)
        except OSError:
            return False
        now = (st.st_size, st.st_blocks, st.st_ctime_ns)
        if now == f.seen:
            return False
        f.seen = now
        return True

    def _discover(self) -> None:
        with self._lock:
            wanted = dict(self._wanted)
            room = MAX_OPEN - sum(len(fs) for fs in self._followed.values())
        if not wanted or room <= 0:
            return
        by_folder: dict[Path, list[tuple[str, re.Pattern[str] | None]]] = {}
        for name in wanted:
            final = self.dest / name
            by_folder.setdefault(final.parent, []).append((name, None))
            for folder, pattern in self._partials(self.dest, name):
                by_folder.setdefault(folder, []).append((name, pattern))
        found: dict[str, Path] = {}
        for folder, names in by_folder.items():
            try:
                entries = [e.name for e in os.scandir(folder)]
            except OSError:
                continue
            present = set(entries)
            for name, pattern in names:
                if name in found:
                    continue
                if pattern is None:
                    if (self.dest / name).name in present:
                        found[name] = self.dest / name
                    continue
                match = next((e for e in entries if pattern.fullmatch(e)), None)
                if match is not None:
                    found[name] = folder / match
        for name, path in list(found.items())[:room]:
            followed = _open(path, wanted[name], partial=path != self.dest / name)
            if followed is None:
                continue
            with self._lock:
                if name not in self._wanted:  # finished or forgotten meanwhile
                    _close(followed)
                    continue
                del self._wanted[name]
                self._followed.setdefault(name, []).append(followed)
                if followed.partial:
                    self.found_partial.add(name)

    def _turn(self, name: str, f: _Followed) -> None:
        try:
            with f.lock:
                if f.fd < 0:
                    return
                read = f.advance(f.settled_end(), self._buffer(), STEP)
                if read >= STEP:  # stopped at its share, not at the end: another turn, changed or not
                    f.seen = (-1, -1, -1)
                with self._lock:
                    self.streamed += read
                if f.partial and self._renamed_whole(name, f):
                    with self._lock:
                        if f in self._followed.get(name, []):
                            self._results[name] = f.digest.result()
                            self._followed[name].remove(f)
                            _close(f)
        except OSError:
            with f.lock:
                _close(f)  # finish() then hashes the file from the disk
        finally:
            with self._lock:
                self._busy.discard(id(f))

    def _renamed_whole(self, name: str, f: _Followed) -> bool:
        """The client renamed the file it wrote to the final name (it does so when the file is whole), and
        every byte of it is digested."""
        try:
            st = os.lstat(self.dest / name)
        except OSError:
            return False
        if (st.st_dev, st.st_ino) != f.inode:
            return False
        f.advance(st.st_size, self._buffer(), st.st_size)
        return f.pos == st.st_size


def _open(path: Path, algorithm: str, partial: bool) -> _Followed | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None  # renamed or removed since the listing: found again under its next name
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
        os.close(fd)
        return None
    return _Followed(fd, (st.st_dev, st.st_ino), path, ALGORITHMS[algorithm][0](), partial)


def _close(f: _Followed) -> None:
    if f.fd >= 0:
        os.close(f.fd)
        f.fd = -1
