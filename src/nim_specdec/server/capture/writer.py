"""The capture file writer: a bounded queue drained by one thread, so requests never wait on disk.

`submit` is called on the server's event loop and only does a non-blocking put; when the queue is
full the record is dropped and counted (the request itself goes on untouched). The thread encodes
records (JSON parsing happens here, off the event loop), joins a batch into one buffer and appends
it to the file.

Several API server processes (`--api-server-count`) append to the same file. The file is opened
with O_APPEND and each batch is written under an exclusive flock(2), so batches of different
processes never interleave and every line stays one complete JSON object. A failed write is undone
by truncating back to the size seen under the lock, so a full disk never leaves half a line.
"""

from __future__ import annotations

import fcntl
import logging
import os
import queue
import threading
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # prometheus_client stays out of the launcher, which only calls open_capture_file
    from nim_specdec.server.capture.formats import Encoder
    from nim_specdec.server.capture.counters import CaptureCounters

log = logging.getLogger("vllm.nim_specdec.server.capture")  # through the server's log handler

DEFAULT_QUEUE_SIZE = 4096
BATCH_MAX = 512
_STOP = object()


def open_capture_file(path: str) -> int:
    """Open (creating it owner-only, with its folder) the capture file for appending; raises OSError."""
    Path(path).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        # An existing file keeps its mode under O_CREAT; captured prompts must stay owner-only.
        if os.fstat(fd).st_uid == os.geteuid():
            os.fchmod(fd, 0o600)
    except OSError:
        os.close(fd)
        raise
    return fd


class CaptureWriter:
    def __init__(self, fd: int, encoder: Encoder, counters: CaptureCounters,
                 queue_size: int = DEFAULT_QUEUE_SIZE) -> None:
        self._fd = fd
        self._encode = encoder
        self.counters = counters
        self._queue: queue.Queue = queue.Queue(maxsize=queue_size)
        self._close_lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="nim-capture-writer", daemon=True)
        self._thread.start()

    def submit(self, timestamp_ms: float, body: bytes) -> bool:
        """Queue one record without blocking; False (and counted) when it was dropped."""
        try:
            self._queue.put_nowait((timestamp_ms, body))
        except queue.Full:
            self.counters.add_dropped("queue_full")
            return False
        return True

    def close(self, timeout: float = 30.0) -> None:
        """Write everything queued so far, then stop the thread and close the file. Idempotent."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        try:
            self._queue.put(_STOP, timeout=timeout)
            self._thread.join(timeout)
        finally:
            if self._thread.is_alive():
                log.warning("capture: writer did not finish within %.0f s; some records may be lost", timeout)
            else:
                os.close(self._fd)

    def _run(self) -> None:
        stop = False
        while not stop:
            batch = [self._queue.get()]
            while len(batch) < BATCH_MAX:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            if _STOP in batch:
                stop = True
                batch = [item for item in batch if item is not _STOP]
            if batch:
                self._write_batch(batch)

    def _write_batch(self, batch: list[tuple[float, bytes]]) -> None:
        lines = []
        for timestamp_ms, body in batch:
            try:
                lines.append(self._encode(timestamp_ms, body))
            except ValueError:
                self.counters.add_dropped("not_json")
        if not lines:
            return
        blob = b"".join(lines)
        try:
            _append_locked(self._fd, blob)
        except OSError as err:
            log.warning("capture: cannot append to the capture file (%s); %d record(s) dropped",
                        err.strerror or err, len(lines))
            self.counters.add_dropped("write_error", len(lines))
            return
        self.counters.add_written(len(lines), len(blob))


def _append_locked(fd: int, blob: bytes) -> None:
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        size = os.fstat(fd).st_size
        view = memoryview(blob)
        try:
            while view:
                view = view[os.write(fd, view):]
        except OSError:
            try:
                os.ftruncate(fd, size)
            except OSError:
                pass
            raise
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
