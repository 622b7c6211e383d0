"""Download progress: a bar on a terminal, otherwise a log line every few seconds with bytes, rate and ETA
(the launcher's log turns each line into a JSON object with NIM_JSONL_LOGGING=1).

Thread-safe: transfer managers report bytes from their worker threads.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Callable, TextIO


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def progress_fields(uri: str, done: int, total: int, elapsed: float) -> dict:
    """The figures of one progress report; pure, so it is tested without a clock."""
    rate = done / elapsed if elapsed > 0 else 0.0
    eta = (total - done) / rate if rate > 0 and total >= done else None
    return {
        "event": "download_progress",
        "uri": uri,
        "bytes": done,
        "total_bytes": total,
        "rate_bytes_per_s": round(rate),
        "eta_s": None if eta is None else round(eta, 1),
    }


def format_line(fields: dict) -> str:
    pct = 100.0 * fields["bytes"] / fields["total_bytes"] if fields["total_bytes"] else 100.0
    eta = "?" if fields["eta_s"] is None else f"{fields['eta_s']:.0f}s"
    return (
        f"downloading {fields['uri']}: {human_bytes(fields['bytes'])} / {human_bytes(fields['total_bytes'])}"
        f" ({pct:.0f}%), {human_bytes(fields['rate_bytes_per_s'])}/s, ETA {eta}"
    )


class Progress:
    def __init__(
        self,
        uri: str,
        log: Callable[[str], None],
        *,
        interval: float = 5.0,
        terminal: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.uri = uri
        self.total = 0
        self.done = 0
        self._log = log
        self._interval = interval
        self._terminal = terminal
        self._clock = clock
        self._lock = threading.Lock()
        self._start = clock()
        self._last = self._start

    def start(self, total_bytes: int, files: int) -> None:
        with self._lock:
            self.total, self.done = total_bytes, 0
            self._start = self._last = self._clock()
        self._log(f"downloading {self.uri}: {files} files, {human_bytes(total_bytes)}")

    def add(self, nbytes: int) -> None:
        with self._lock:
            self.done += nbytes
            now = self._clock()
            interval = 0.2 if self._terminal is not None else self._interval
            if now - self._last < interval:
                return
            self._last = now
            fields = progress_fields(self.uri, self.done, self.total, now - self._start)
        self._report(fields)

    def finish(self) -> None:
        fields = progress_fields(self.uri, self.done, self.total, self._clock() - self._start)
        fields["event"] = "download_done"
        if self._terminal is not None:
            self._terminal.write("\r" + format_line(fields) + "\n")
            self._terminal.flush()
        else:
            self._report(fields)

    def _report(self, fields: dict) -> None:
        if self._terminal is not None:
            self._terminal.write("\r" + format_line(fields))
            self._terminal.flush()
        else:
            self._log(format_line(fields))


class DirectoryWatch:
    """Reports progress for SDKs without a byte callback: polls the bytes written under a directory."""

    def __init__(self, root, progress: Progress, period: float = 0.5) -> None:
        self._root, self._progress, self._period = root, progress, period
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._seen = 0
        self.last_growth = time.monotonic()  # when the bytes on disk last grew (for stall detection)

    @property
    def seen(self) -> int:
        """Bytes on disk under the directory at the last poll."""
        return self._seen

    def __enter__(self) -> "DirectoryWatch":
        self._seen = self._measure()  # files already there (a resumed download) are not this transfer's bytes
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._poll()

    def _poll(self) -> None:
        total = self._measure()
        if total > self._seen:
            self._progress.add(total - self._seen)
            self._seen = total
            self.last_growth = time.monotonic()

    def _measure(self) -> int:
        total = 0
        for dirpath, dirnames, filenames in os.walk(self._root):
            dirnames[:] = [d for d in dirnames if d != ".cache"]  # SDK bookkeeping, not model bytes
            for name in filenames:
                try:
                    total += os.lstat(os.path.join(dirpath, name)).st_size
                except OSError:
                    pass  # renamed or removed between the listing and the stat
        return total

    def _run(self) -> None:
        while not self._stop.wait(self._period):
            self._poll()
