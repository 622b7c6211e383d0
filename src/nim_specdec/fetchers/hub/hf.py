"""hf://ORG/NAME[@REVISION] through huggingface_hub's snapshot_download.

A branch or tag is first resolved to its commit (one metadata request), and the cache holds commits:
hf_branch.py decides what is served. The backend below always downloads one commit.

HF_TOKEN (or HUGGING_FACE_HUB_TOKEN), HF_ENDPOINT and HF_HUB_OFFLINE are honoured. The file list
comes from the Hub's tree API first, so that names are checked before anything is written and the
LFS sha256 of each weight file is verified after the download. Files stored through Xet are fetched over
HTTP (the Hub serves every Xet file there too), never by the hf_xet backend: see http_only.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import re
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from nim_specdec.config.sources import SourceRef
from nim_specdec.errors import MaterializeError
from nim_specdec.fetchers.download.base import FetchContext
from nim_specdec.fetchers.download.child_backend import ChildTransferBackend
from nim_specdec.fetchers.download.materialize import CachedFetcher, Job, RemoteFile, first_line, retry_delay
from nim_specdec.fetchers.hub import hf_branch, hf_choice
from nim_specdec.fetchers.hub.branch_refs import is_commit
from nim_specdec.fetchers.transfer import error_map
from nim_specdec.fetchers.transfer.error_map import TransferFailed
from nim_specdec.fetchers.transfer.progress import DirectoryWatch
from nim_specdec.fetchers.transfer.safety import ListingBudget, target_path
from nim_specdec.fetchers.volume.cache import normalized_uri
from nim_specdec.fetchers.volume.resume import glob_escape
from nim_specdec.text.redact import redact_text


def hf_partials(dest: Path, name: str) -> list[tuple[Path, re.Pattern[str]]]:
    """Where snapshot_download(local_dir=dest) writes `name` before it is whole (huggingface_hub's
    _local_folder.py): .cache/huggingface/download/<folder>/<short hash of its base name>.<etag>.incomplete,
    the short hash urlsafe base64 of sha1(base name + ".metadata")."""
    path = Path(name)
    short = base64.urlsafe_b64encode(hashlib.sha1(f"{path.name}.metadata".encode()).digest()).decode()  # noqa: S324 - the library's name
    folder = dest / ".cache" / "huggingface" / "download" / path.parent
    return [(folder, re.compile(re.escape(short) + r"\.[^/]+\.incomplete"))]


def _token(env) -> str | bool:
    # False (not None) keeps the library from reading a token saved on disk by someone else.
    return env.get("HF_TOKEN") or env.get("HUGGING_FACE_HUB_TOKEN") or False


@dataclass(frozen=True)
class HfTransfer:
    """What the transfer's process needs (plain data: it is a fresh interpreter, download/guarded_transfer.py)."""

    uri: str
    repo: str
    commit: str
    dest: Path
    endpoint: str | None
    token: str | bool = field(repr=False)
    timeout: float
    timeout_given: bool
    workers: int
    patterns: list[str] | None  # None: every file of the commit


def http_only(constants) -> None:
    """Switches huggingface_hub's hf_xet backend off in this interpreter.

    The rate guard and the write follower watch the `.incomplete` files huggingface_hub's HTTP path writes in the
    destination; hf_xet's own client writes through a chunk cache outside it, and no loopback server (olah
    included) serves Xet, so none of those guarantees could be tested on it. is_xet_available() reads the
    constant on every call, so setting it here holds for the snapshot_download that follows.
    """
    constants.HF_HUB_DISABLE_XET = True


def transfer(args: HfTransfer, _file_done) -> None:
    """Runs in the transfer's process: the commit's files into args.dest (the Hasher is told at the end)."""
    from huggingface_hub import constants, snapshot_download  # noqa: PLC0415 - the hf extra, only for an hf:// source

    http_only(constants)
    if args.timeout_given:  # read once from os.environ at import: set again in this interpreter
        constants.HF_HUB_DOWNLOAD_TIMEOUT = max(1, int(args.timeout))
    try:
        snapshot_download(
            args.repo,
            revision=args.commit,
            local_dir=str(args.dest),
            endpoint=args.endpoint,
            token=args.token,
            etag_timeout=args.timeout,
            max_workers=args.workers,
            tqdm_class=_quiet_tqdm(),
            allow_patterns=args.patterns,
        )
    except Exception as err:  # noqa: BLE001
        _raise_permanent(args.uri, err)
        raise


class HFBackend(ChildTransferBackend):
    child_imports = (__name__, "huggingface_hub")

    def download_with(self, job: Job, child) -> list[RemoteFile]:
        from huggingface_hub import HfApi, close_session, constants  # noqa: PLC0415 - the hf extra, only for an hf:// source
        from huggingface_hub.hf_api import RepoFile  # noqa: PLC0415 - the hf extra, only for an hf:// source

        if job.settings.timeout_given:
            # The library reads its download timeout once, from os.environ at import; ours wins when set.
            constants.HF_HUB_DOWNLOAD_TIMEOUT = max(1, int(job.settings.timeout))
        endpoint = job.env.get("HF_ENDPOINT") or None
        api = HfApi(endpoint=endpoint, token=_token(job.env))
        revision = job.ref.revision or "main"
        with error_map.permanent_errors(job.uri, _raise_permanent):
            # A commit is what the fetcher hands over; only fetch_only's early read may name a branch.
            sha = (
                revision
                if is_commit(revision)
                else api.repo_info(job.ref.location, revision=revision, timeout=job.settings.timeout).sha
            )
            budget = ListingBudget(job.uri, job.settings.timeout)
            listing = budget.counted(api.list_repo_tree(job.ref.location, recursive=True, revision=sha))
            tree = [entry for entry in listing if isinstance(entry, RepoFile) and job.selects(entry.path)]
        files = []
        for f in tree:
            target_path(job.uri, job.dest, f.path)
            files.append(RemoteFile(f.path, int(f.size), sha256=f.lfs.sha256 if f.lfs is not None else None))
        if not files:
            raise MaterializeError(job.uri, "the repository holds no files", "check the repository name and revision")
        todo = job.to_fetch(files)
        if not todo:
            return files
        # The files still to fetch, by name: a name is escaped to match only itself (the library's patterns
        # are fnmatch's); all of them when nothing was resumed, which also keeps the library's own listing.
        patterns = None if len(todo) == len(files) and job.only is None else [glob_escape(f.name) for f in todo]

        args = HfTransfer(
            job.uri,
            job.ref.location,
            sha,
            job.dest,
            endpoint,
            _token(job.env),
            job.settings.timeout,
            job.settings.timeout_given,
            min(job.settings.concurrency, 8),
            patterns,
        )
        close_session()  # the listing's connections are not needed while the child transfers
        job.hasher.follow(todo, hf_partials)  # digested in this process while the transfer's process writes
        with DirectoryWatch(job.dest, job.progress):
            # The library counts a body in reads of DOWNLOAD_CHUNK_SIZE: the guard's window covers two of them.
            child.run(job, transfer, args, self.is_transient, granularity=constants.DOWNLOAD_CHUNK_SIZE)
        shutil.rmtree(Path(job.dest) / ".cache", ignore_errors=True)  # the library's own bookkeeping
        return files

    def is_transient(self, err: BaseException) -> bool:
        if isinstance(err, TransferFailed):  # judged in the transfer's process, where the exception was
            return err.transient
        return error_map.is_transient(
            err, (*_rules(), error_map.Rule(_transport_errors(), transient=True)), _status(err)
        )


def _status(err: BaseException) -> int | None:
    return getattr(getattr(err, "response", None), "status_code", None)


def _transport_errors() -> tuple[type[BaseException], ...]:
    """The HTTP clients huggingface_hub may run on (httpx, its successor httpx2, requests in older releases),
    among those imported already: an error of a client that was never imported cannot have been raised, and
    importing one only to say so cost a Hub-down start ~0.1 s (requests)."""
    found: list[type[BaseException]] = []
    for module, name in (
        ("httpx2", "TransportError"),
        ("httpx", "TransportError"),
        ("requests.exceptions", "ConnectionError"),
    ):
        kind = getattr(sys.modules.get(module), name, None)
        if isinstance(kind, type) and issubclass(kind, BaseException):
            found.append(kind)
    return tuple(found)


@error_map.lazy
def _rules() -> tuple[error_map.Rule, ...]:
    from huggingface_hub import errors as hub  # noqa: PLC0415 - the hf extra, only for an hf:// source

    # GatedRepoError is a RepositoryNotFoundError: it comes first.
    return (
        error_map.Rule(
            (hub.GatedRepoError,), problem="the repository is gated", fix="accept its terms on the Hub and set HF_TOKEN"
        ),
        error_map.Rule(
            (hub.RevisionNotFoundError,), problem="the revision does not exist", fix="check the @REVISION part"
        ),
        error_map.Rule(
            (hub.RepositoryNotFoundError,),
            problem="repository not found or not accessible",
            fix="check the name, and HF_TOKEN for a private repository",
        ),
        error_map.Rule(
            (hub.RemoteEntryNotFoundError, hub.EntryNotFoundError),
            problem="a file of the repository was not found (404)",
        ),
    )


def _quiet_tqdm():
    """The library's own bars would mix with our progress lines; ours report the bytes."""
    from tqdm.auto import tqdm  # noqa: PLC0415 - the hf extra, only for an hf:// source

    class Quiet(tqdm):
        def __init__(self, *args, **kwargs):
            kwargs["disable"] = True
            super().__init__(*args, **kwargs)

    return Quiet


def _raise_permanent(uri: str, err: BaseException) -> None:
    error_map.raise_permanent(uri, err, _rules())
    status = _status(err)
    if status == 401:
        raise MaterializeError(
            uri, "repository not found or not accessible", "check the name, and HF_TOKEN for a private repository"
        ) from None
    if status == 404:
        raise MaterializeError(uri, "a file of the repository was not found (404)") from None
    if status == 403:
        raise MaterializeError(uri, "access denied (403)", "check HF_TOKEN's permissions") from None


def resolve_commit(ref: SourceRef, ctx: FetchContext, budget: float | None = None) -> str:
    """The commit `ref`'s branch or tag names now: one metadata request (`expand=sha` keeps the Hub's answer
    small). `budget`: the seconds it may take when a cached commit can be served instead, asked once: a Hub
    that fails or is down is answered with that commit at once, not after the backoffs of a download's
    retries. None (nothing cached): retried like a download, within its timeout and retries.
    No answer raises hf_branch.UnansweredError, which says how the Hub failed."""
    from huggingface_hub import HfApi  # noqa: PLC0415 - imported only when an hf:// source is fetched

    uri = normalized_uri(ref)
    revision = ref.revision or "main"
    settings = ctx.download
    api = HfApi(endpoint=ctx.env.get("HF_ENDPOINT") or None, token=_token(ctx.env))
    deadline = None if budget is None else time.monotonic() + budget
    attempts = 1 if budget is not None else settings.retries + 1
    for attempt in range(attempts):
        timeout = settings.timeout if deadline is None else min(settings.timeout, deadline - time.monotonic())
        try:
            sha = api.model_info(ref.location, revision=revision, timeout=max(0.1, timeout), expand=["sha"]).sha
        except Exception as err:  # noqa: BLE001 - one line, as for a download
            detail = redact_text(first_line(err), ctx.secrets)
            transient = HFBackend().is_transient(err)
            failed = hf_choice.Failed(hf_choice.failure_kind(_status(err), _timed_out(err), transient), detail)
            try:
                _raise_permanent(uri, err)
                if not transient:
                    raise MaterializeError(uri, f"cannot resolve {revision!r} to a commit: {detail}") from None
                delay = retry_delay(attempt)
                out_of_time = deadline is not None and time.monotonic() + delay >= deadline
                if attempt == attempts - 1 or out_of_time:
                    raise MaterializeError(
                        uri,
                        f"cannot resolve {revision!r} to a commit after {attempt + 1} attempts: {detail}",
                        "check that HF_ENDPOINT is reachable, or set NIM_DISABLE_MODEL_DOWNLOAD=1 to serve the cached one",  # noqa: E501
                    ) from None
            except MaterializeError as error:
                raise hf_branch.UnansweredError(error, failed) from None
            ctx.log(f"{uri}: asking for the commit of {revision!r} failed ({detail}); retrying in {delay:.1f}s")
            time.sleep(delay)
            continue
        if not is_commit(sha):
            raise MaterializeError(
                uri,
                f"the Hub answered no commit id for {revision!r} ({sha!r:.60})",
                "check HF_ENDPOINT: it should be a Hugging Face Hub",
            )
        return sha
    raise AssertionError("unreachable")


def _timed_out(err: BaseException) -> bool:
    """httpx's and requests' timeouts, and the standard library's, by their class names (no import of either)."""
    return isinstance(err, TimeoutError) or any("Timeout" in cls.__name__ for cls in type(err).__mro__)


class HFFetcher(CachedFetcher):
    def backend(self) -> HFBackend:
        return HFBackend()

    def fetch(self, ref: SourceRef, ctx: FetchContext) -> Path:
        return self.fetch_with_reason(ref, ctx)[0]

    def fetch_with_reason(self, ref: SourceRef, ctx: FetchContext) -> tuple[Path, str]:
        """The files, and why they are that commit (the plan's commit_reason)."""
        return hf_branch.fetch_with_reason(ref, _offline_if_asked(ctx), self.backend(), resolve_commit)

    def commit_reason(self, ref: SourceRef, ctx: FetchContext) -> str:
        """What a start would serve and why, from the cache alone (`plan`)."""
        return hf_branch.describe(ref, _offline_if_asked(ctx))

    def cached(self, ref: SourceRef, ctx: FetchContext) -> Path | None:
        return hf_branch.cached(ref, ctx)


def _offline_if_asked(ctx: FetchContext) -> FetchContext:
    if ctx.hf_hub_offline and not ctx.offline:
        return dataclasses.replace(ctx, offline=True)
    return ctx
