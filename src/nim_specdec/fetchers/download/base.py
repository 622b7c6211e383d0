"""The contract every fetcher honours.

A fetcher turns a SourceRef into a local directory that holds the model files
(config.json and weights). It never returns a half-written directory: either the
complete directory or a MaterializeError (exit 3) that says what to do.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Mapping, Protocol

from nim_specdec.config.download_settings import DownloadSettings
from nim_specdec.config.sources import SourceRef


def say_nothing(_msg: str) -> None:
    """A context's log when nothing is to be said: a lookup while the plan is made (its warnings are the plan's)."""


@dataclass(frozen=True)
class FetchContext:
    env: Mapping[str, str]  # credentials and endpoints come from here, never from os.environ directly
    cache_dir: Path
    offline: bool = False  # NIM_DISABLE_MODEL_DOWNLOAD: cache only, no network
    log: Callable[[str], None] = say_nothing
    download: DownloadSettings = field(default_factory=DownloadSettings)  # NIM_DOWNLOAD_*, as parsed at the edge
    hf_hub_offline: bool = False  # HF_HUB_OFFLINE (HostEnv): hf:// sources cache only
    secrets: tuple[str, ...] = field(default=(), repr=False)  # values masked in messages (HostEnv.secrets)
    warn: Callable[[str], None] | None = None  # a warning line (a cached commit served instead); None: `log`
    trust_shared: bool = False  # NIM_CACHE_TRUST_SHARED: the platform vouches for whoever writes cache_dir

    def quiet(self) -> FetchContext:
        """This context without its log lines: for a lookup while planning, or for another process (which logs
        with its own)."""
        return replace(self, log=say_nothing, warn=None)

    @property
    def vouched(self) -> Path | None:
        """The folder whose writers the platform vouches for (files/volume.py), or None."""
        return self.cache_dir if self.trust_shared else None


class Fetcher(Protocol):
    def fetch(self, ref: SourceRef, ctx: FetchContext) -> Path:
        """Return a local directory with the source's files, downloading into the cache if needed."""
        ...

    def cached(self, ref: SourceRef, ctx: FetchContext) -> Path | None:
        """Return the local directory if it is available without any network access, else None."""
        ...
