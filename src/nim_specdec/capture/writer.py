"""The capture file writer: a bounded queue drained by one thread, so requests never wait on disk.

`submit` is called on the server's event loop and only does a non-blocking put; when the queue is
full (in records, or in bytes held) the record is dropped and counted (the request itself goes on
untouched). The thread encodes records (JSON parsing happens here, off the event loop), joins a batch
into one buffer and appends it to the file.

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
from typing import TYPE_CHECKING

from nim_specdec.capture.formats import TooDeep

if TYPE_CHECKING:  # prometheus_client stays out of the launcher, which only calls open_capture_file
    from nim_specdec.capture.counters import CaptureCounters
    from nim_specdec.capture.formats import Encoder

log = logging.getLogger("vllm.nim_specdec.capture")  # through the server's log handler

DEFAULT_QUEUE_SIZE = 4096
# Bodies waiting for (or being encoded by) the writer, in bytes: a count alone would let 4096 bodies of
# 8 MiB that parse slowly hold 32 GiB inside the API server. Past this, records are dropped and counted.
DEFAULT_QUEUE_BYTES = 256 * 1024 * 1024
BATCH_MAX = 512
_STOP = object()


class CaptureWriter:
    def __init__(
        self,
        fd: int,
        encoder: Encoder,
        counters: CaptureCounters,
        queue_size: int = DEFAULT_QUEUE_SIZE,
        queue_bytes: int = DEFAULT_QUEUE_BYTES,
    ) -> None:
        self._fd = fd
        self._max_bytes = queue_bytes
        self._held_bytes = 0  # queued or in the batch being written
        self._bytes_lock = threading.Lock()
        self._encode = encoder
        self.counters = counters
        self._queue: queue.Queue = queue.Queue(maxsize=queue_size)
        self._close_lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="nim-capture-writer", daemon=True)
        self._thread.start()

    def submit(self, timestamp_ms: float, body: bytes) -> bool:
        """Queue one record without blocking; False (and counted) when it was dropped."""
        if not self._thread.is_alive():
            self.counters.add_dropped("writer_stopped")
            return False
        with self._bytes_lock:
            if self._held_bytes + len(body) > self._max_bytes:
                full = True
            else:
                full, self._held_bytes = False, self._held_bytes + len(body)
        if full:
            self.counters.add_dropped("queue_full")
            return False
        try:
            self._queue.put_nowait((timestamp_ms, body))
        except queue.Full:
            self._release(len(body))
            self.counters.add_dropped("queue_full")
            return False
        return True

    def _release(self, nbytes: int) -> None:
        with self._bytes_lock:
            self._held_bytes -= nbytes

    def close(self, timeout: float = 30.0) -> None:
        """Write everything queued so far, then stop the thread and close the file. Idempotent."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        try:
            if self._thread.is_alive():
                self._queue.put(_STOP, timeout=timeout)
                self._thread.join(timeout)
        except queue.Full:
            pass  # reported below: the thread did not drain in time
        finally:
            if self._thread.is_alive():
                log.warning("capture: writer did not finish within %.0f s; some records may be lost", timeout)
            else:
                os.close(self._fd)

    def _run(self) -> None:
        try:
            self._drain()
        except BaseException as err:  # noqa: BLE001 - never end silently: say so, and submit counts the rest
            log.error(
                "capture: the writer stopped (%s); later records are dropped and counted as writer_stopped",
                type(err).__name__,
            )

    def _drain(self) -> None:
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
                try:
                    self._write_batch(batch)
                except Exception:  # noqa: BLE001 - the writer must outlive any one batch
                    log.exception("capture: %d record(s) dropped by an unexpected error", len(batch))
                    self.counters.add_dropped("encode_error", len(batch))
                finally:
                    self._release(sum(len(body) for _, body in batch))

    def _write_batch(self, batch: list[tuple[float, bytes]]) -> None:
        lines = []
        for timestamp_ms, body in batch:
            try:
                lines.append(self._encode(timestamp_ms, body))
            except TooDeep:
                self.counters.add_dropped("too_deep")
            except ValueError:
                self.counters.add_dropped("not_json")
            except Exception as err:  # noqa: BLE001 - one odd body must not stop the capture
                log.warning("capture: a record could not be encoded (%s); dropped", type(err).__name__)
                self.counters.add_dropped("encode_error")
        if not lines:
            return
        blob = b"".join(lines)
        try:
            _append_locked(self._fd, blob)
        except OSError as err:
            log.warning(
                "capture: cannot append to the capture file (%s); %d record(s) dropped", err.strerror or err, len(lines)
            )
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
                view = view[os.write(fd, view) :]
        except OSError:
            try:
                os.ftruncate(fd, size)
            except OSError:
                pass
            raise
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
