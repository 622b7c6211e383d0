"""ngc://ORG/[TEAM/]NAME:VERSION through ngcsdk's model registry client.

The API key comes from NGC_CLI_API_KEY, then NGC_API_KEY. The SDK's base URL is NGC_CLI_API_URL
(NGC_CLI_AUTH_URL for the legacy key exchange); it always speaks HTTPS (http:// is rewritten).
It writes into DEST/NAME_vVERSION; that directory is moved to be the cache entry's files.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from nim_specdec.errors import MaterializeError
from nim_specdec.fetchers.download.child_backend import ChildTransferBackend
from nim_specdec.fetchers.download.materialize import CachedFetcher, Job, RemoteFile
from nim_specdec.fetchers.transfer import error_map
from nim_specdec.fetchers.transfer.error_map import TransferFailed
from nim_specdec.fetchers.transfer.progress import DirectoryWatch
from nim_specdec.fetchers.transfer.safety import ListingBudget, target_path


def api_key(env) -> str | None:
    return env.get("NGC_CLI_API_KEY") or env.get("NGC_API_KEY") or None


def split_target(location: str) -> tuple[str, str | None, str]:
    """ORG/NAME or ORG/TEAM/NAME -> (org, team, name)."""
    parts = location.split("/")
    if len(parts) == 2:
        return parts[0], None, parts[1]
    if len(parts) == 3:
        return parts[0], parts[1], parts[2]
    raise MaterializeError(f"ngc://{location}", "malformed NGC model path", "expected ngc://ORG/[TEAM/]NAME:VERSION")


def point_sdk(env, timeout: float | None) -> None:
    """Apply this context's endpoints and timeout to ngcsdk.

    The SDK copies NGC_CLI_API_URL, NGC_CLI_AUTH_URL and NGC_CLI_TRANSFER_TIMEOUT into module
    constants when first imported; setting them here makes the context's environment win, as it
    does for the other schemes. In a launcher the context's environment is the process's, so this
    changes nothing there.
    """
    import ngcbase.api.authentication as authentication  # noqa: PLC0415 - the ngc extra, only for an ngc:// source
    import ngcbase.environ as environ  # noqa: PLC0415 - the ngc extra, only for an ngc:// source
    import ngcbase.transfer.async_download as async_download  # noqa: PLC0415 - the ngc extra, only for an ngc:// source
    import ngcbase.util.utils as utils  # noqa: PLC0415 - the ngc extra, only for an ngc:// source

    api_url = env.get("NGC_CLI_API_URL") or env.get("NGC_CLI_URL")
    if api_url:
        environ.NGC_CLI_API_URL = utils.NGC_CLI_API_URL = api_url
    if env.get("NGC_CLI_AUTH_URL"):
        environ.NGC_CLI_AUTH_URL = authentication.NGC_CLI_AUTH_URL = env["NGC_CLI_AUTH_URL"]
    if timeout is not None:
        environ.NGC_CLI_TRANSFER_TIMEOUT = async_download.NGC_CLI_TRANSFER_TIMEOUT = max(1, int(timeout))


@dataclass(frozen=True)
class NgcTransfer:
    """What the transfer's process needs (plain data: it is a fresh interpreter, download/guarded_transfer.py)."""

    uri: str
    env: dict[str, str] = field(repr=False)  # the NGC_* variables: key, endpoints
    timeout: float | None
    org: str
    target: str  # ORG/[TEAM/]NAME:VERSION
    staging: Path
    patterns: list[str] | None


def transfer(args: NgcTransfer, _file_done) -> None:
    """Runs in the transfer's process: the version's files under args.staging (the Hasher is told at the end)."""
    point_sdk(args.env, args.timeout)  # the SDK's module constants, set again in this interpreter
    from ngcsdk import Client  # noqa: PLC0415 - the ngc extra, only for an ngc:// source

    client = Client()
    try:
        client.configure(api_key=api_key(args.env), org_name=args.org)
        result = client.registry.model.download_version(
            args.target, destination=str(args.staging), file_patterns=args.patterns
        )
    except Exception as err:  # noqa: BLE001
        _raise_permanent(args.uri, err)
        raise
    if getattr(result, "status", "COMPLETED").upper() not in ("COMPLETED", "COMPLETE"):
        raise OSError(f"NGC transfer ended with status {result.status}")


class NGCBackend(ChildTransferBackend):
    child_imports = (__name__, "ngcsdk")

    def download_with(self, job: Job, child) -> list[RemoteFile]:
        if not job.ref.revision:
            raise MaterializeError(job.uri, "no version given", "expected ngc://ORG/[TEAM/]NAME:VERSION")
        org, team, name = split_target(job.ref.location)
        target = f"{job.ref.location}:{job.ref.revision}"
        point_sdk(job.env, job.settings.timeout if job.settings.timeout_given else None)
        from ngcsdk import Client  # noqa: PLC0415 - the ngc extra, only for an ngc:// source

        client = Client()
        with error_map.permanent_errors(job.uri, _raise_permanent):
            # The team travels in the target; configuring it too would make the SDK list the org's teams first.
            client.configure(api_key=api_key(job.env), org_name=org)
            budget = ListingBudget(job.uri, job.settings.timeout)
            listing = list(budget.counted(client.registry.model.list_files(target, org=org, team=team)))
        files = []
        for item in (i for i in listing if job.selects(i.path)):
            # The SDK joins these names to its directory unchecked: an absolute or '..' name must stop here.
            target_path(job.uri, job.dest, item.path)
            files.append(RemoteFile(item.path, int(item.sizeInBytes or 0)))
        if not files:
            raise MaterializeError(job.uri, "the model version holds no files", "check the name and version")
        job.to_fetch(files, resumable=False)  # the SDK writes a folder of its own, moved into place whole
        staging = job.dest.parent / "ngc"
        staging.mkdir(mode=0o700)

        args = NgcTransfer(
            job.uri,
            {k: v for k, v in job.env.items() if k.startswith("NGC_")},
            job.settings.timeout if job.settings.timeout_given else None,
            org,
            target,
            staging,
            sorted(job.only) if job.only is not None else None,
        )
        with DirectoryWatch(staging, job.progress):
            # The SDK writes a body in reads of NGC_CLI_TRANSFER_CHUNK_SIZE (128 KiB by default), into files
            # it first truncated to their full size: the blocks written are counted.
            child.run(job, transfer, args, self.is_transient, granularity=_chunk_size(), watch=staging, sparse=True)
        written = staging / f"{name}_v{job.ref.revision}"
        if not written.is_dir():
            raise MaterializeError(job.uri, "the NGC client wrote no model directory")
        os.rmdir(job.dest)
        os.rename(written, job.dest)
        shutil.rmtree(staging, ignore_errors=True)
        return files

    def is_transient(self, err: BaseException) -> bool:
        if isinstance(err, TransferFailed):  # judged in the transfer's process, where the exception was
            return err.transient
        return error_map.is_transient(err, _rules(), _status(err))


def _chunk_size() -> int:
    import ngcbase.environ  # noqa: PLC0415 - the ngc extra, only for an ngc:// source

    return int(getattr(ngcbase.environ, "NGC_CLI_TRANSFER_CHUNK_SIZE", 128 * 1024))


def _status(err: BaseException) -> int | None:
    return getattr(getattr(err, "response", None), "status_code", None)


NOT_FOUND = ("model or version not found on NGC", "check ORG/[TEAM/]NAME:VERSION")
REFUSED = ("NGC refused the credentials", "set NGC_CLI_API_KEY or NGC_API_KEY")


@error_map.lazy
def _rules() -> tuple[error_map.Rule, ...]:
    import aiohttp  # noqa: PLC0415 - the ngc extra, only for an ngc:// source
    import requests.exceptions as rq  # noqa: PLC0415 - the ngc extra, only for an ngc:// source
    from ngcbase import errors as ngc  # noqa: PLC0415 - the ngc extra, only for an ngc:// source

    # The SDK lists through requests and downloads through aiohttp.
    return (
        error_map.Rule((ngc.ResourceNotFoundException,), problem=NOT_FOUND[0], fix=NOT_FOUND[1]),
        error_map.Rule((ngc.AuthenticationException, ngc.AccessDeniedException), problem=REFUSED[0], fix=REFUSED[1]),
        error_map.Rule(
            (
                rq.ConnectionError,
                rq.Timeout,
                rq.ChunkedEncodingError,
                aiohttp.ClientConnectionError,
                aiohttp.ClientPayloadError,
            ),
            transient=True,
        ),
    )


def _raise_permanent(uri: str, err: BaseException) -> None:
    error_map.raise_permanent(uri, err, _rules())
    status = _status(err)
    if status == 404:
        raise MaterializeError(uri, *NOT_FOUND) from None
    if status in (401, 403):
        raise MaterializeError(uri, *REFUSED) from None
    from ngcbase import errors as ngc  # noqa: PLC0415 - the ngc extra, only for an ngc:// source

    # The SDK reports an unreachable endpoint as an argument error: that one is retried, the others are final.
    if isinstance(err, (ngc.InvalidArgumentError, ngc.NgcException)) and "is not reachable" not in str(err):
        raise MaterializeError(
            uri, f"NGC: {str(err).splitlines()[0][:200] if str(err) else type(err).__name__}"
        ) from None


class NGCFetcher(CachedFetcher):
    def backend(self) -> NGCBackend:
        return NGCBackend()
