"""The disk pre-flight: a download starts only when the cache volume can hold what is still to fetch.

What is still to fetch is the source's listing less the files already verified on the volume (a resumed
download, fetchers/volume/resume.py). It must fit in the free space of the volume that holds the download folder
(statvfs: the blocks an unprivileged user may still write) with a margin to spare: the file system's own
blocks for each file, the marker, and what else the pod writes there (the compile cache, logs). A volume
too small is refused before the first byte, in one line with both figures (exit 3, as every source that
cannot be materialized): a download that fills the volume at 90 % would fail after hours, and a restarted
pod would fill it again.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from nim_specdec.errors import MaterializeError
from nim_specdec.fetchers.transfer.progress import human_bytes

MARGIN_FIXED = 64 * 1024 * 1024  # bytes kept free in any case
MARGIN_SHARE = 0.01  # and 1 % of what is to fetch: file-system blocks, the next files a pod writes


@dataclass(frozen=True)
class SpaceVerdict:
    need: int  # bytes still to fetch
    margin: int
    free: int  # bytes the volume can still take

    @property
    def fits(self) -> bool:
        return self.free >= self.need + self.margin

    @property
    def required(self) -> int:
        return self.need + self.margin


def margin_for(need: int) -> int:
    return MARGIN_FIXED + int(need * MARGIN_SHARE)


def space_verdict(need: int, free: int) -> SpaceVerdict:
    """Pure: does `need` bytes (plus the margin) fit in `free`? Nothing to fetch always fits."""
    need = max(0, need)
    return SpaceVerdict(need, margin_for(need) if need else 0, max(0, free))


def free_bytes(folder: Path) -> int:
    st = os.statvfs(folder)
    return st.f_bavail * st.f_frsize


def refuse_if_short(uri: str, need: int, folder: Path, volume: Path | None = None) -> SpaceVerdict:
    """Raise one line (exit 3) when `need` bytes do not fit on the volume holding `folder`; the verdict otherwise.
    A volume whose free space cannot be read is not refused here (a full disk still ends the download)."""
    try:
        free = free_bytes(folder)
    except OSError:
        return space_verdict(0, 0)
    verdict = space_verdict(need, free)
    if not verdict.fits:
        where = volume or folder
        raise MaterializeError(
            uri,
            f"the cache volume has {human_bytes(verdict.free)} free but the download needs "
            f"{human_bytes(verdict.need)} more (and a margin of {human_bytes(verdict.margin)}); nothing was downloaded",
            f"free at least {human_bytes(verdict.required - verdict.free)} under {where} "
            "(nim-specdec cache ls / cache prune), or mount a volume of at least "
            f"{human_bytes(verdict.required)} free there",
        )
    return verdict
