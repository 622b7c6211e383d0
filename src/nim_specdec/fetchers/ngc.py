"""ngc://ORG/[TEAM/]NAME:VERSION through ngcsdk's model registry client.

The API key comes from NGC_CLI_API_KEY, then NGC_API_KEY. The SDK's base URL is NGC_CLI_API_URL
(NGC_CLI_AUTH_URL for the legacy key exchange); it always speaks HTTPS (http:// is rewritten).
It writes into DEST/NAME_vVERSION; that directory is moved to be the cache entry's files.
"""

from __future__ import annotations

import os
import shutil

from nim_specdec.errors import MaterializeError
from nim_specdec.fetchers.materialize import CachedFetcher, Job, RemoteFile
from nim_specdec.fetchers.progress import DirectoryWatch
from nim_specdec.fetchers.safety import ListingBudget, target_path

_TRANSIENT_NAMES = {"ConnectionError", "Timeout", "ReadTimeout", "ConnectTimeout", "ChunkedEncodingError",
                    "ClientConnectionError", "ServerDisconnectedError", "ClientPayloadError", "TimeoutError"}


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
    import ngcbase.api.authentication as authentication
    import ngcbase.environ as environ
    import ngcbase.transfer.async_download as async_download
    import ngcbase.util.utils as utils

    api_url = env.get("NGC_CLI_API_URL") or env.get("NGC_CLI_URL")
    if api_url:
        environ.NGC_CLI_API_URL = utils.NGC_CLI_API_URL = api_url
    if env.get("NGC_CLI_AUTH_URL"):
        environ.NGC_CLI_AUTH_URL = authentication.NGC_CLI_AUTH_URL = env["NGC_CLI_AUTH_URL"]
    if timeout is not None:
        environ.NGC_CLI_TRANSFER_TIMEOUT = async_download.NGC_CLI_TRANSFER_TIMEOUT = max(1, int(timeout))


class NGCBackend:
    def download(self, job: Job) -> list[RemoteFile]:
        if not job.ref.revision:
            raise MaterializeError(job.uri, "no version given", "expected ngc://ORG/[TEAM/]NAME:VERSION")
        org, team, name = split_target(job.ref.location)
        target = f"{job.ref.location}:{job.ref.revision}"
        point_sdk(job.env, job.settings.timeout if "NIM_DOWNLOAD_TIMEOUT" in job.env else None)
        from ngcsdk import Client

        client = Client()
        try:
            # The team travels in the target; configuring it too would make the SDK list the org's teams first.
            client.configure(api_key=api_key(job.env), org_name=org)
            budget = ListingBudget(job.uri, job.settings.timeout)
            listing = []
            for item in client.registry.model.list_files(target, org=org, team=team):
                budget.step()
                listing.append(item)
        except MaterializeError:
            raise
        except Exception as err:  # noqa: BLE001
            _raise_permanent(job.uri, err)
            raise
        files = []
        for item in listing:
            # The SDK joins these names to its directory unchecked: an absolute or '..' name must stop here.
            target_path(job.uri, job.dest, item.path)
            files.append(RemoteFile(item.path, int(item.sizeInBytes or 0)))
        if not files:
            raise MaterializeError(job.uri, "the model version holds no files", "check the name and version")
        job.progress.start(sum(f.size for f in files), len(files))
        staging = job.dest.parent / "ngc"
        staging.mkdir(mode=0o700)
        try:
            with DirectoryWatch(staging, job.progress):
                result = client.registry.model.download_version(target, destination=str(staging))
        except Exception as err:  # noqa: BLE001
            _raise_permanent(job.uri, err)
            raise
        if getattr(result, "status", "COMPLETED").upper() not in ("COMPLETED", "COMPLETE"):
            raise OSError(f"NGC transfer ended with status {result.status}")
        written = staging / f"{name}_v{job.ref.revision}"
        if not written.is_dir():
            raise MaterializeError(job.uri, "the NGC client wrote no model directory")
        os.rmdir(job.dest)
        os.rename(written, job.dest)
        shutil.rmtree(staging, ignore_errors=True)
        return files

    def is_transient(self, err: BaseException) -> bool:
        status = getattr(getattr(err, "response", None), "status_code", None)
        if isinstance(status, int):
            return status >= 500 or status in (408, 429)
        return type(err).__name__ in _TRANSIENT_NAMES or isinstance(err, (OSError, TimeoutError))


def _raise_permanent(uri: str, err: BaseException) -> None:
    name = type(err).__name__
    status = getattr(getattr(err, "response", None), "status_code", None)
    if name == "ResourceNotFoundException" or status == 404:
        raise MaterializeError(uri, "model or version not found on NGC", "check ORG/[TEAM/]NAME:VERSION") from None
    if name in ("AuthenticationException", "AccessDeniedException") or status in (401, 403):
        raise MaterializeError(uri, "NGC refused the credentials", "set NGC_CLI_API_KEY or NGC_API_KEY") from None
    if name in ("InvalidArgumentError", "NgcException") and "is not reachable" not in str(err):
        raise MaterializeError(uri, f"NGC: {str(err).splitlines()[0][:200] if str(err) else name}") from None


class NGCFetcher(CachedFetcher):
    def backend(self) -> NGCBackend:
        return NGCBackend()
