"""The rate guard alone, on a clock of its own: a trickle trips it, counted byte by byte or not at all (a
client that reports its reads of 256 KiB sees nothing of a trickle), a fast download never trips it, nor a
slow link above the minimum that the client counts in big reads, and the deadline holds whatever the rate."""

from __future__ import annotations

import pytest

from nim_specdec.config.download_settings import DownloadSettings
from nim_specdec.fetchers.transfer.rate_guard import RateGuard, TooSlowError


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def run(guard: RateGuard, clock: Clock, bytes_per_second: float, seconds: int, counted_in: int = 1) -> None:
    """`counted_in`: the client reports bytes only in whole reads of this size."""
    for second in range(1, seconds + 1):
        clock.now = float(second)
        arrived = int(bytes_per_second * second)
        guard.check(arrived - arrived % counted_in)


SETTINGS = DownloadSettings(timeout=30.0, min_rate=16 * 1024.0, deadline=86400.0)


@pytest.mark.parametrize(
    "rate,seconds,trips",
    [
        (1, 600, "NIM_DOWNLOAD_MIN_RATE_KB"),  # a byte a second: cut after the 120 s window
        (0, 600, "NIM_DOWNLOAD_MIN_RATE_KB"),  # nothing counted for a whole window (the read timeout is shorter)
        (10 * 1024 * 1024, 600, None),
        (17 * 1024, 600, None),  # just above the minimum
        (15 * 1024, 600, "NIM_DOWNLOAD_MIN_RATE_KB"),
    ],
)
def test_the_minimum_rate_over_the_window(rate, seconds, trips):
    clock = Clock()
    guard = RateGuard("s3://b/m", SETTINGS, clock)
    if trips is None:
        run(guard, clock, rate, seconds)
        return
    with pytest.raises(TooSlowError, match=trips):
        run(guard, clock, rate, seconds)
    assert clock.now >= guard.window


READ = 256 * 1024  # boto3's transfer manager reports a body in reads of this size


@pytest.mark.parametrize(
    "rate,timeout,trips",
    [
        (1, 30.0, True),  # a byte a second: no read ever completes, nothing is counted; cut after the window
        (20 * 1024, 1.0, False),  # above the minimum: a read takes 12.8 s, longer than 4 x 1 s; never cut
        (10 * 1024, 1.0, True),  # below it, whatever the size of the reads
    ],
)
def test_a_client_that_counts_in_big_reads(rate, timeout, trips):
    clock = Clock()
    guard = RateGuard("s3://b/m", DownloadSettings(timeout=timeout, min_rate=16 * 1024.0), clock, granularity=READ)
    assert guard.window >= 2 * READ / (16 * 1024)
    if not trips:
        run(guard, clock, rate, 600, counted_in=READ)
        return
    with pytest.raises(TooSlowError, match="NIM_DOWNLOAD_MIN_RATE_KB"):
        run(guard, clock, rate, 600, counted_in=READ)


def test_the_deadline_holds_whatever_the_rate():
    clock = Clock()
    guard = RateGuard("s3://b/m", DownloadSettings(timeout=30.0, min_rate=0.0, deadline=100.0), clock)
    with pytest.raises(TooSlowError, match="NIM_DOWNLOAD_DEADLINE=100"):
        run(guard, clock, 10 * 1024 * 1024, 200)
    assert clock.now == 101.0


def test_the_defaults_fit_a_100_gb_checkpoint_on_a_slow_link():
    settings = DownloadSettings()
    assert 100e9 / settings.deadline < 1.2e6  # 1.2 MB/s finishes within the deadline
    assert settings.min_rate <= 16 * 1024
