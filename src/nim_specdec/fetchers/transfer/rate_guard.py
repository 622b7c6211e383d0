"""Every download with an overall deadline and a minimum rate: a store that trickles a byte a second never
trips a read timeout (each read gets its byte in time), so without these it holds the entry's lock for days.

NIM_DOWNLOAD_DEADLINE   seconds one attempt at a source's download may take (default 86400: a 100 GB checkpoint
                        at 1.2 MB/s; 0 = no deadline)
NIM_DOWNLOAD_MIN_RATE_KB  KiB/s the download must average over a window of 4 x NIM_DOWNLOAD_TIMEOUT
                        (default 16 over 120 s; 0 = no minimum): below it the store is trickling

Checked from the loop that waits for the transfer (s5cmd's watchdog, boto3's futures, and for hf://, gs:// and
ngc:// the process that waits for the transfer's child: guarded_transfer.py); the download is then stopped, its
partial files removed and the entry's lock released by the caller's cleanup.

A window in which no byte was counted is below the minimum too. A client that counts bytes as they land on
disk (s5cmd) shows a trickle byte by byte, but boto3's transfer manager reports a body in reads of 256 KiB:
a store that trickles one byte a second never completes one, so the window counted nothing, and the read
timeout never fires either (each read gets its byte in time). A true stall is still ended first by the read
timeout, which is shorter than the window, as a failure that is retried. The window is at least twice the
time one such read takes at the minimum rate (`granularity`), so a slow link above the minimum is never cut.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Callable

from nim_specdec.config.download_settings import DownloadSettings
from nim_specdec.errors import MaterializeError
from nim_specdec.fetchers.transfer.progress import human_bytes

# The rate is averaged over this many read timeouts: long enough for a slow start (TLS, the first part).
WINDOW_TIMEOUTS = 4


class TooSlowError(MaterializeError):
    """Past NIM_DOWNLOAD_DEADLINE or below NIM_DOWNLOAD_MIN_RATE_KB: not retried (the deadline covers all)."""


class RateGuard:
    def __init__(
        self,
        uri: str,
        settings: DownloadSettings,
        clock: Callable[[], float] = time.monotonic,
        granularity: int = 0,
    ) -> None:
        """`granularity`: the most bytes the client may receive before it counts them (0: byte by byte)."""
        self.uri, self._settings, self._clock, self._granularity = uri, settings, clock, granularity
        self._start = clock()
        self._samples: deque[tuple[float, int]] = deque([(self._start, 0)])

    @property
    def window(self) -> float:
        floor = 2 * self._granularity / self._settings.min_rate if self._settings.min_rate else 0.0
        return max(WINDOW_TIMEOUTS * self._settings.timeout, floor)

    def check(self, done_bytes: int) -> None:
        """Raise TooSlowError when the deadline has passed or the last window's average is below the minimum."""
        now = self._clock()
        deadline = self._settings.deadline
        if deadline and now - self._start > deadline:
            raise TooSlowError(
                self.uri,
                f"the download took more than NIM_DOWNLOAD_DEADLINE={deadline:g} s "
                f"({human_bytes(done_bytes)} received); stopped and removed",
                "raise NIM_DOWNLOAD_DEADLINE for a slow link, or use a closer mirror",
            )
        self._samples.append((now, done_bytes))
        while len(self._samples) > 2 and self._samples[1][0] <= now - self.window:
            self._samples.popleft()
        first_time, first_bytes = self._samples[0]
        minimum = self._settings.min_rate
        if minimum and now - first_time >= self.window:
            rate = (done_bytes - first_bytes) / (now - first_time)
            if rate < minimum:
                raise TooSlowError(
                    self.uri,
                    f"the store sent {human_bytes(rate)}/s over the last {now - first_time:.0f} s, below "
                    f"NIM_DOWNLOAD_MIN_RATE_KB={minimum / 1024:g}; stopped and removed",
                    "check the link to the store, or lower NIM_DOWNLOAD_MIN_RATE_KB (0 turns the minimum off)",
                )
