"""gs://BUCKET/PREFIX through google-cloud-storage's transfer manager (parallel downloads).

Credentials: Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, workload identity,
metadata server); when none are found, an anonymous client (public buckets). STORAGE_EMULATOR_HOST
points the client at an emulator or a compatible store, without credentials.
"""

from __future__ import annotations

import base64
import http.client
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from nim_specdec.config.download_settings import DownloadSettings
from nim_specdec.errors import MaterializeError
from nim_specdec.fetchers.download.child_backend import ChildTransferBackend
from nim_specdec.fetchers.download.materialize import CachedFetcher, Job, RemoteFile
from nim_specdec.fetchers.integrity import digests
from nim_specdec.fetchers.integrity.verify import CompletionWriter
from nim_specdec.fetchers.integrity.write_follower import in_place
from nim_specdec.fetchers.transfer import error_map
from nim_specdec.fetchers.transfer.error_map import TransferFailed
from nim_specdec.fetchers.transfer.progress import DirectoryWatch
from nim_specdec.fetchers.transfer.safety import ListingBudget, target_path


def make_client(env: Mapping[str, str]):
    from google.auth.credentials import AnonymousCredentials  # noqa: PLC0415 - the gcs extra, only for a gs:// source
    from google.cloud import storage  # noqa: PLC0415 - the gcs extra, only for a gs:// source

    emulator = env.get("STORAGE_EMULATOR_HOST")
    if emulator:
        if "://" not in emulator:
            emulator = "http://" + emulator
        return storage.Client(
            project=env.get("GOOGLE_CLOUD_PROJECT") or "emulator",
            credentials=AnonymousCredentials(),
            client_options={"api_endpoint": emulator},
        )
    import google.auth  # noqa: PLC0415 - the gcs extra, only for a gs:// source
    from google.auth.exceptions import DefaultCredentialsError  # noqa: PLC0415 - the gcs extra, only for a gs:// source

    try:
        credentials, project = google.auth.default()
    except DefaultCredentialsError:
        return storage.Client.create_anonymous_client()
    return storage.Client(project=env.get("GOOGLE_CLOUD_PROJECT") or project, credentials=credentials)


def _retry(settings: DownloadSettings):
    from google.cloud.storage.retry import DEFAULT_RETRY  # noqa: PLC0415 - the gcs extra, only for a gs:// source

    # The library retries 5xx, 429 and connection errors; bound its total time per call.
    return DEFAULT_RETRY.with_timeout(settings.timeout * 2).with_delay(initial=0.2, maximum=4.0)


def list_blobs(client, job: Job) -> list[tuple[str, RemoteFile]]:
    bucket_name, _, prefix = job.ref.location.partition("/")
    prefix = prefix.strip("/")
    listed = []
    blobs = client.list_blobs(
        bucket_name, prefix=f"{prefix}/" if prefix else None, timeout=job.settings.timeout, retry=_retry(job.settings)
    )
    budget = ListingBudget(job.uri, job.settings.timeout)
    crc32c = digests.available("crc32c")
    for blob in budget.counted(blobs):
        rel = blob.name[len(prefix) + 1 :] if prefix else blob.name
        if blob.name.endswith("/") and not blob.size:
            continue  # a "folder" placeholder
        target_path(job.uri, job.dest, rel)
        md5 = base64.b64decode(blob.md5_hash).hex() if blob.md5_hash else None
        # GCS keeps a CRC32C of every object (composed ones too, which have no MD5): a fraction of MD5's cost.
        crc = None
        if crc32c and digests.well_formed_crc("crc32c", blob.crc32c):
            crc = ("crc32c", blob.crc32c)
        if job.selects(rel):
            listed.append((blob.name, RemoteFile(rel, int(blob.size or 0), md5=md5, crc=crc)))
    if not listed:
        raise MaterializeError(job.uri, "no objects found under this prefix", "check the bucket and prefix")
    return listed


@dataclass(frozen=True)
class GcsTransfer:
    """What the transfer's process needs (plain data: it is a fresh interpreter, download/guarded_transfer.py)."""

    uri: str
    env: dict[str, str]
    settings: DownloadSettings
    dest: Path
    bucket: str
    listed: list[tuple[str, RemoteFile]]  # (object name, the file it becomes)


def transfer(args: GcsTransfer, file_done) -> None:
    """Runs in the transfer's process: every listed object into args.dest, each reported once whole."""
    from google.cloud.storage import transfer_manager  # noqa: PLC0415 - the gcs extra, only for a gs:// source

    bucket = make_client(args.env).bucket(args.bucket)
    handles = []
    try:
        pairs = []
        for name, f in args.listed:
            path = target_path(args.uri, args.dest, f.name)
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fh = open(path, "wb")
            handles.append(fh)
            # The parent's Hasher digests each object as it is written (fetchers/integrity/write_follower.py); the
            # library's own MD5 check would hash every byte a second time, so it is off. The bytes are counted
            # on disk by the process that waits (DirectoryWatch).
            writer = CompletionWriter(fh, f.size, lambda _n: None, lambda f=f: file_done(f))
            # A blob made from the name (not the listing's media link) keeps downloads on our endpoint.
            pairs.append((bucket.blob(name), writer))
        results = transfer_manager.download_many(
            pairs,
            download_kwargs={"timeout": args.settings.timeout, "retry": _retry(args.settings), "checksum": None},
            worker_type=transfer_manager.THREAD,
            max_workers=args.settings.concurrency,
            raise_exception=True,
        )
        for result in results:
            if isinstance(result, BaseException):
                raise result
    except Exception as err:
        _raise_permanent(args.uri, err)
        raise
    finally:
        for fh in handles:
            fh.close()


class GCSBackend(ChildTransferBackend):
    child_imports = (__name__, "google.cloud.storage.transfer_manager")

    def download_with(self, job: Job, child) -> list[RemoteFile]:
        client = make_client(job.env)
        with error_map.permanent_errors(job.uri, _raise_permanent):
            listed = list_blobs(client, job)
        files = [f for _, f in listed]
        todo = job.to_fetch(files)
        wanted = {f.name for f in todo}
        listed = [(name, f) for name, f in listed if f.name in wanted]
        if not listed:
            return files
        bucket = job.ref.location.partition("/")[0]
        args = GcsTransfer(job.uri, dict(job.env), job.settings, job.dest, bucket, listed)
        job.hasher.follow(todo, in_place)  # digested in this process while the transfer's process writes
        with DirectoryWatch(job.dest, job.progress):
            # The library writes a body in reads of 8 KiB: the guard's window need not be longer for it.
            child.run(job, transfer, args, self.is_transient, granularity=8192)
        return files

    def is_transient(self, err: BaseException) -> bool:
        if isinstance(err, TransferFailed):  # judged in the transfer's process, where the exception was
            return err.transient
        return error_map.is_transient(err, _rules(), getattr(err, "code", None))


@error_map.lazy
def _rules() -> tuple[error_map.Rule, ...]:
    import google.api_core.exceptions  # noqa: PLC0415 - the gcs extra, only for a gs:// source
    import google.auth.exceptions  # noqa: PLC0415 - the gcs extra, only for a gs:// source
    import google.resumable_media.common  # noqa: PLC0415 - the gcs extra, only for a gs:// source
    import requests.exceptions as rq  # noqa: PLC0415 - the gcs extra, only for a gs:// source
    import urllib3.exceptions  # noqa: PLC0415 - the gcs extra, only for a gs:// source

    # The client speaks HTTP through requests and urllib3; google-auth and resumable-media add their own.
    return (
        error_map.Rule(
            (
                rq.ConnectionError,
                rq.ChunkedEncodingError,
                rq.Timeout,
                urllib3.exceptions.ProtocolError,
                http.client.IncompleteRead,
                google.api_core.exceptions.RetryError,
                google.auth.exceptions.TransportError,
                google.resumable_media.common.DataCorruption,
            ),
            transient=True,
        ),
    )


def _raise_permanent(uri: str, err: BaseException) -> None:
    code = getattr(err, "code", None)
    if code == 404:
        raise MaterializeError(
            uri, "the bucket or an object does not exist (404)", "check the bucket and prefix"
        ) from None
    if code in (401, 403):
        raise MaterializeError(
            uri, f"access denied ({code})", "check GOOGLE_APPLICATION_CREDENTIALS and the bucket's permissions"
        ) from None


class GCSFetcher(CachedFetcher):
    def backend(self) -> GCSBackend:
        return GCSBackend()
