"""Download once into the shared cache: lock, temporary directory, verify, atomic rename, marker last.

Every remote scheme goes through `materialize`; a backend only lists and transfers files.
"""

from __future__ import annotations

import os
import random
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Protocol

from nim_specdec.config import variables as var
from nim_specdec.config.download_settings import DownloadSettings
from nim_specdec.errors import LauncherError, MaterializeError
from nim_specdec.fetchers.download.base import FetchContext
from nim_specdec.fetchers.integrity.verify import Hasher, RemoteFile, verify
from nim_specdec.fetchers.transfer import error_map
from nim_specdec.fetchers.transfer.progress import Progress, human_bytes
from nim_specdec.fetchers.transfer.safety import check_tree
from nim_specdec.fetchers.volume import cache, disk_space, resume
from nim_specdec.fetchers.volume.entry_lock import entry_lock
from nim_specdec.files import trust, writable
from nim_specdec.text.redact import redact_text

__all__ = ["Backend", "CachedFetcher", "Job", "RemoteFile", "cached", "fetch_only", "materialize"]
from nim_specdec.config.sources import SourceRef


@dataclass(frozen=True)
class Job:
    ref: SourceRef
    uri: str
    env: Mapping[str, str]
    settings: DownloadSettings
    dest: Path  # empty directory to fill
    progress: Progress
    log: Callable[[str], None]
    hasher: Hasher  # follows the files while the client writes them (Hasher.follow), told when each is whole
    # Only these top-level names (config.json and friends, read before the weights); None: every file.
    only: frozenset[str] | None = None
    secrets: tuple[str, ...] = ()  # values a backend masks in its messages (FetchContext.secrets)
    volume: Path | None = None  # the cache folder the disk pre-flight names (None: dest's own)

    def selects(self, name: str) -> bool:
        return self.only is None or name in self.only

    def to_fetch(self, files: list[RemoteFile], resumable: bool = True) -> list[RemoteFile]:
        """Every backend calls this with the listing before its first byte: the files already in `dest` that
        the listing vouches for are kept (fetchers/volume/resume.py; `resumable=False`: none, for a client that
        must write into an empty folder), the rest must fit on the volume (fetchers/volume/disk_space.py), and the
        files still to fetch are returned, their bytes the progress's total."""
        present = resume.sized_matches(self.dest, files) if resumable else {}
        if not resumable:
            for child in list(self.dest.iterdir()):
                shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
        # A file on the volume without a digest to check it by is fetched again (resume.digest_checked).
        need = sum(f.size for f in files if f.name not in present or f.digest is None)
        if self.volume is not None:  # the cache volume; fetch_only's scratch copy of a few small files is not
            disk_space.refuse_if_short(self.uri, need, self.dest, self.volume)
        kept = resume.digest_checked(self.dest, present, self.hasher) if present else set()
        todo = [f for f in files if f.name not in kept]
        if kept:
            resumed = sum(f.size for f in files if f.name in kept)
            self.log(
                f"{self.uri}: resuming: {len(kept)} of {len(files)} files ({human_bytes(resumed)}) are on the "
                "volume already, verified"
            )
        self.progress.start(sum(f.size for f in todo), len(todo))
        return todo


class Backend(Protocol):
    def download(self, job: Job) -> list[RemoteFile]:
        """Fill job.dest with the source's files and return what the store says they are."""
        ...

    def is_transient(self, err: BaseException) -> bool:
        """True for failures worth a retry: timeouts, dropped connections, 5xx."""
        ...


def cached(ref: SourceRef, ctx: FetchContext) -> Path | None:
    if trust.system_dir_problem(str(ctx.cache_dir)) or trust.open_to_others_reason(ctx.cache_dir, vouched=ctx.vouched):
        return None
    layout = cache.CacheLayout.under(ctx.cache_dir, ctx.trust_shared)
    return cache.complete_files(layout, cache.entry_name(ref))


def materialize(
    ref: SourceRef, ctx: FetchContext, backend: Backend, marker_extra: Mapping[str, str] | None = None
) -> Path:
    """`marker_extra`: what the scheme records in the entry's marker besides the URI and files (hf://: the commit)."""
    uri = cache.normalized_uri(ref)
    trust.refuse_system_dir(ctx.cache_dir, var.CACHE_PATH)
    trust.refuse_open_to_others(ctx.cache_dir, var.CACHE_PATH, var.CACHE_TRUST_SHARED, ctx.vouched)
    layout = cache.CacheLayout.under(ctx.cache_dir, ctx.trust_shared)
    name = cache.entry_name(ref)
    hit = cache.complete_files(layout, name)
    if hit is not None:
        return hit
    foreign = cache.untrusted_reason(layout, name)
    if foreign and ctx.offline:
        raise MaterializeError(
            uri,
            f"the cache entry is not used because another user could have written it ({foreign}) and downloads are disabled",  # noqa: E501
            f"remove {layout.entry(name)} and allow downloads, or pre-fetch it as uid {os.geteuid()}",
        )
    if foreign:
        ctx.log(f"{uri}: ignoring the cache entry another user could have written ({foreign}); downloading afresh")
    if ctx.offline:
        raise MaterializeError(
            uri,
            f"not in the cache at {ctx.cache_dir} and downloads are disabled (NIM_DISABLE_MODEL_DOWNLOAD / HF_HUB_OFFLINE)",  # noqa: E501
            f"pre-fetch it with `nim-specdec download {uri}` using the same NIM_CACHE_PATH, or allow downloads",
        )
    settings = ctx.download
    _make_dirs(layout, ctx.cache_dir)
    with entry_lock(layout, name, uri, settings, ctx.log):
        hit = cache.complete_files(layout, name)
        if hit is not None:  # another launcher finished it while we waited
            ctx.log(f"{uri}: downloaded by another launcher, using the cached copy")
            return hit
        _clean_leftovers(layout, name)
        return _download_with_retries(ref, uri, ctx, backend, settings, layout, name, marker_extra)


def fetch_only(ref: SourceRef, ctx: FetchContext, backend: Backend, names: frozenset[str], into: Path) -> Path:
    """The source's files among `names` (config.json and the like), verified, in a new directory under
    `into`: a scratch copy for reading before the weights arrive, never a cache entry. One attempt; the
    caller falls back to waiting for the whole download when it fails."""
    uri = cache.normalized_uri(ref)
    settings = ctx.download
    dest = Path(tempfile.mkdtemp(prefix="early-", dir=into)) / cache.FILES
    dest.mkdir(mode=0o700)
    progress = Progress(uri, lambda _msg: None, interval=settings.progress_interval, terminal=None)
    try:
        _download_verified(
            backend, ref, uri, ctx.env, settings, dest, progress, lambda _msg: None, only=names, secrets=ctx.secrets
        )
    except MaterializeError:
        raise
    except Exception as err:  # noqa: BLE001 - one line, as for a full download
        detail = redact_text(first_line(err), ctx.secrets)
        raise MaterializeError(uri, f"cannot read {', '.join(sorted(names))[:80]}: {detail}") from None
    return dest


def _download_verified(
    backend: Backend,
    ref: SourceRef,
    uri: str,
    env: Mapping[str, str],
    settings: DownloadSettings,
    dest: Path,
    progress: Progress,
    log: Callable[[str], None],
    only: frozenset[str] | None = None,
    secrets: tuple[str, ...] = (),
    volume: Path | None = None,
) -> list[RemoteFile]:
    """One transfer into `dest`, then the tree and its digests checked: what a full download and
    `fetch_only` share."""
    with Hasher(dest, settings.verify_checksums) as hasher:
        expected = backend.download(Job(ref, uri, env, settings, dest, progress, log, hasher, only, secrets, volume))
        progress.finish()
        check_tree(uri, dest)
        verify(uri, dest, expected, hasher)
    return expected


def _download_with_retries(ref, uri, ctx, backend, settings, layout, name, marker_extra=None) -> Path:
    """Each attempt first takes over the files of the leftovers of this entry (a killed launcher's, the
    previous attempt's): a retry or a restarted pod resumes from the verified files on the volume. A final
    failure removes the attempt's folder; an interruption (SIGTERM, SIGKILL) leaves it for the next start."""
    secrets = ctx.secrets
    terminal = sys.stderr if sys.stderr.isatty() else None
    for attempt in range(settings.retries + 1):
        tmp = Path(tempfile.mkdtemp(prefix=layout.tmp_prefix(name), dir=layout.tmp_dir()))
        try:
            progress = Progress(uri, ctx.log, interval=settings.progress_interval, terminal=terminal)
            dest = tmp / cache.FILES
            dest.mkdir(mode=0o700)
            resume.adopt_leftovers(layout.tmp_dir(), layout.tmp_prefix(name), dest, tmp)
            expected = _download_verified(
                backend, ref, uri, ctx.env, settings, dest, progress, ctx.log, secrets=secrets, volume=ctx.cache_dir
            )
            _owner_only(tmp)
            os.rename(tmp, layout.entry(name))
            cache.fsync_dir(layout.entry(name).parent)
            document = cache.marker_document(uri, [(f.name, f.size) for f in expected], extra=marker_extra)
            cache.write_marker(layout.marker(name), document)
            ctx.log(f"{uri}: cached at {layout.files(name)}")
            return layout.files(name)
        except LauncherError:  # ours: already one line with its own exit code (a ConfigError stays exit 2)
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        except Exception as err:  # noqa: BLE001 - every SDK failure becomes one line, retried if transient
            detail = redact_text(first_line(err), secrets)
            if error_map.disk_full(err):
                shutil.rmtree(tmp, ignore_errors=True)
                raise MaterializeError(
                    uri,
                    f"the cache volume is full ({detail}); the partial download was removed",
                    f"free space under {ctx.cache_dir} (nim-specdec cache ls shows what it holds) "
                    "or mount a larger volume",
                ) from None
            if not backend.is_transient(err):
                shutil.rmtree(tmp, ignore_errors=True)
                raise MaterializeError(uri, f"download failed: {detail}") from None
            if attempt == settings.retries:
                shutil.rmtree(tmp, ignore_errors=True)
                raise MaterializeError(
                    uri,
                    f"download failed after {attempt + 1} attempts: {detail}",
                    "check that the endpoint is reachable; NIM_DOWNLOAD_TIMEOUT and NIM_DOWNLOAD_RETRIES tune the limits",  # noqa: E501
                ) from None
            delay = retry_delay(attempt)
            ctx.log(
                f"{uri}: attempt {attempt + 1} failed ({detail}); retrying in {delay:.1f}s (verified files are kept)"
            )
            time.sleep(delay)
        # An interruption (Terminated, SystemExit, KeyboardInterrupt) leaves `tmp` as it is: the next start
        # takes over its files once it has verified them.
    raise AssertionError("unreachable")


def retry_delay(attempt: int) -> float:
    """Seconds before retry `attempt + 1`: exponential, capped, jittered so that launchers do not retry in step."""
    return min(8.0, 0.5 * 2**attempt) * (0.5 + random.random() / 2)


def first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0][:300] if text else ''}".rstrip(": ")


def _owner_only(root: Path) -> None:
    for dirpath, dirnames, filenames in os.walk(root):
        os.chmod(dirpath, 0o700)
        for fname in filenames:
            path = os.path.join(dirpath, fname)
            if not os.path.islink(path):
                os.chmod(path, 0o600)


def _make_dirs(layout: cache.CacheLayout, cache_dir: Path) -> None:
    unwritable = writable.unwritable_reason(Path(cache_dir))
    if unwritable:
        raise MaterializeError(var.CACHE_PATH, *unwritable)
    try:
        trust.make_dirs(cache_dir)
        for d in (layout.root, layout.root / "entries", layout.tmp_dir(), layout.lock("x").parent):
            trust.ensure_own_dir(d, var.CACHE_PATH, layout.vouched)
    except OSError as err:
        raise MaterializeError(
            var.CACHE_PATH, f"cannot write the cache at {cache_dir}: {err.strerror}", "mount a writable volume there"
        ) from None


def _clean_leftovers(layout: cache.CacheLayout, name: str) -> None:
    """Called with the entry's lock held: an entry without its marker (or a foreign one) belongs to no live
    download. It is renamed aside into tmp/ first, which needs no write access inside it; the download's
    first attempt removes it there with the other leftovers of this entry (after taking over the verified
    files of those that are the launcher's own download folders: fetchers/volume/resume.py)."""
    entry = layout.entry(name)
    if os.path.islink(entry) or (os.path.lexists(entry) and not entry.is_dir()):
        os.unlink(entry)
    elif os.path.lexists(entry):
        aside = Path(tempfile.mkdtemp(prefix=layout.tmp_prefix(name), dir=layout.tmp_dir()))
        os.rename(entry, aside / "old")


class CachedFetcher:
    """The Fetcher for a remote scheme: subclasses name their backend."""

    def backend(self) -> Backend:
        raise NotImplementedError

    def cached(self, ref: SourceRef, ctx: FetchContext) -> Path | None:
        return cached(ref, ctx)

    def fetch(self, ref: SourceRef, ctx: FetchContext) -> Path:
        return materialize(ref, ctx, self.backend())

    def fetch_only(self, ref: SourceRef, ctx: FetchContext, names: frozenset[str], into: Path) -> Path:
        return fetch_only(ref, ctx, self.backend(), names, into)
