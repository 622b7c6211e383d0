"""hf://ORG/NAME[@REVISION] through huggingface_hub's snapshot_download.

HF_TOKEN (or HUGGING_FACE_HUB_TOKEN), HF_ENDPOINT and HF_HUB_OFFLINE are honoured. The file list
comes from the Hub's tree API first, so that names are checked before anything is written and the
LFS sha256 of each weight file is verified after the download. snapshot_download uses the hf_xet
transfer backend when the Hub serves a file through Xet and hf_xet is installed.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

from nim_specdec.errors import MaterializeError
from nim_specdec.fetchers.base import FetchContext
from nim_specdec.fetchers.materialize import CachedFetcher, Job, RemoteFile
from nim_specdec.fetchers.progress import DirectoryWatch
from nim_specdec.fetchers.safety import ListingBudget, target_path
from nim_specdec.fetchers.tuning import truthy
from nim_specdec.config.sources import SourceRef

_TRANSIENT_NAMES = {
    "ConnectError", "ConnectTimeout", "ReadTimeout", "WriteTimeout", "PoolTimeout", "TimeoutException",
    "ReadError", "RemoteProtocolError", "NetworkError", "TransportError", "ProtocolError",
    "ConnectionError", "TimeoutError",
}


def _token(env) -> str | bool:
    # False (not None) keeps the library from reading a token saved on disk by someone else.
    return env.get("HF_TOKEN") or env.get("HUGGING_FACE_HUB_TOKEN") or False


class HFBackend:
    def download(self, job: Job) -> list[RemoteFile]:
        from huggingface_hub import HfApi, constants, snapshot_download
        from huggingface_hub.hf_api import RepoFile

        if "NIM_DOWNLOAD_TIMEOUT" in job.env:
            # The library reads its download timeout once, from os.environ at import; ours wins when set.
            constants.HF_HUB_DOWNLOAD_TIMEOUT = max(1, int(job.settings.timeout))
        endpoint = job.env.get("HF_ENDPOINT") or None
        api = HfApi(endpoint=endpoint, token=_token(job.env))
        revision = job.ref.revision or "main"
        try:
            sha = api.repo_info(job.ref.location, revision=revision, timeout=job.settings.timeout).sha
            budget = ListingBudget(job.uri, job.settings.timeout)
            tree = []
            for entry in api.list_repo_tree(job.ref.location, recursive=True, revision=sha):
                budget.step()
                if isinstance(entry, RepoFile):
                    tree.append(entry)
        except MaterializeError:
            raise
        except Exception as err:  # noqa: BLE001
            _raise_permanent(job.uri, err)
            raise
        files = []
        for f in tree:
            target_path(job.uri, job.dest, f.path)
            files.append(RemoteFile(f.path, int(f.size), sha256=f.lfs.sha256 if f.lfs is not None else None))
        if not files:
            raise MaterializeError(job.uri, "the repository holds no files", "check the repository name and revision")
        job.progress.start(sum(f.size for f in files), len(files))
        try:
            with DirectoryWatch(job.dest, job.progress):
                snapshot_download(
                    job.ref.location,
                    revision=sha,
                    local_dir=str(job.dest),
                    endpoint=endpoint,
                    token=_token(job.env),
                    etag_timeout=job.settings.timeout,
                    max_workers=min(job.settings.concurrency, 8),
                    tqdm_class=_quiet_tqdm(),
                )
        except Exception as err:  # noqa: BLE001
            _raise_permanent(job.uri, err)
            raise
        shutil.rmtree(Path(job.dest) / ".cache", ignore_errors=True)  # the library's own bookkeeping
        return files

    def is_transient(self, err: BaseException) -> bool:
        response = getattr(err, "response", None)
        status = getattr(response, "status_code", None)
        if isinstance(status, int):
            return status >= 500 or status in (408, 429)
        return type(err).__name__ in _TRANSIENT_NAMES or isinstance(err, (OSError, TimeoutError))


def _quiet_tqdm():
    """The library's own bars would mix with our progress lines; ours report the bytes."""
    from tqdm.auto import tqdm

    class Quiet(tqdm):
        def __init__(self, *args, **kwargs):
            kwargs["disable"] = True
            super().__init__(*args, **kwargs)

    return Quiet


def _raise_permanent(uri: str, err: BaseException) -> None:
    name = type(err).__name__
    status = getattr(getattr(err, "response", None), "status_code", None)
    if name == "GatedRepoError":
        raise MaterializeError(uri, "the repository is gated", "accept its terms on the Hub and set HF_TOKEN") from None
    if name == "RevisionNotFoundError":
        raise MaterializeError(uri, "the revision does not exist", "check the @REVISION part") from None
    if name == "RepositoryNotFoundError" or status == 401:
        raise MaterializeError(
            uri, "repository not found or not accessible", "check the name, and HF_TOKEN for a private repository"
        ) from None
    if name in ("RemoteEntryNotFoundError", "EntryNotFoundError") or status == 404:
        raise MaterializeError(uri, "a file of the repository was not found (404)") from None
    if status == 403:
        raise MaterializeError(uri, "access denied (403)", "check HF_TOKEN's permissions") from None


class HFFetcher(CachedFetcher):
    def backend(self) -> HFBackend:
        return HFBackend()

    def fetch(self, ref: SourceRef, ctx: FetchContext) -> Path:
        if truthy(ctx.env.get("HF_HUB_OFFLINE")) and not ctx.offline:
            ctx = dataclasses.replace(ctx, offline=True)
        return super().fetch(ref, ctx)
