"""s3://BUCKET/PREFIX through boto3's transfer manager (parallel files, ranged parts for big files).

Credentials: the standard AWS chain (env, profile, web identity, instance role); NIM_S3_ANONYMOUS=1
sends unsigned requests for public buckets. Endpoint: AWS_ENDPOINT_URL_S3, then AWS_ENDPOINT_URL
(S3-compatible stores).

Transfers go through s5cmd when it is installed (the s3 extra ships it; NIM_S5CMD=0 opts out):
with checksums on it measured faster than boto3's transfer manager, whose Python data path costs
more CPU per byte than the digest itself (bench/bench_s3_download.py). boto3 remains the fallback.

Files are checked by the full-object CRC the store keeps, where it keeps one (`with_store_crcs`): S3 does
for every object written since 2025, multipart ones included, whose ETag is no MD5. CRC64NVME costs
about a thirtieth of MD5 here, which is what brings a verified download near s5cmd's own time.
"""

from __future__ import annotations

import functools
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Mapping

from nim_specdec.config.download_settings import DownloadSettings
from nim_specdec.errors import MaterializeError, printable
from nim_specdec.fetchers.buckets import s5cmd
from nim_specdec.fetchers.buckets.s3_location import endpoint_url, split_location
from nim_specdec.fetchers.buckets.s3_redirects import StoreRedirect, refuse_unbounded_redirect
from nim_specdec.fetchers.buckets.s3_transfer_hooks import OpenBodies, TransferSubscriber
from nim_specdec.fetchers.download.materialize import CachedFetcher, Job, RemoteFile
from nim_specdec.fetchers.integrity import digests
from nim_specdec.fetchers.integrity.write_follower import s3transfer_partials
from nim_specdec.fetchers.transfer import error_map
from nim_specdec.fetchers.transfer.rate_guard import RateGuard
from nim_specdec.fetchers.transfer.safety import ListingBudget, check_clashes, target_path

_MD5_ETAG = re.compile(r'^"?([0-9a-f]{32})"?$')
# Bytes boto3's transfer manager reads from a body before it reports them (its default, named for the rate guard).
IO_CHUNK = 256 * 1024
# Full-object CRCs a store may keep, cheapest per byte first (bench/bench_s3_download.py).
_CRCS = ("crc64nvme", "crc32c", "crc32")


@functools.lru_cache(maxsize=1)
def _service_models():
    """botocore's loader of service models, shared by the clients of one process: each new session
    would read and parse S3's model again (0.12 s to 0.3 s here), and a launch makes several clients
    (the early check's fetch_only, then the download, per source). It holds only botocore's own files."""
    from botocore.loaders import create_loader  # noqa: PLC0415 - the s3 extra, only for an s3:// source

    return create_loader()


def make_client(env: Mapping[str, str], settings: DownloadSettings):
    import botocore.session  # noqa: PLC0415 - the s3 extra, only for an s3:// source
    from botocore import UNSIGNED  # noqa: PLC0415 - the s3 extra, only for an s3:// source
    from botocore.config import Config  # noqa: PLC0415 - the s3 extra, only for an s3:// source

    endpoint = endpoint_url(env)
    config = Config(
        connect_timeout=settings.timeout,
        read_timeout=settings.timeout,
        retries={"max_attempts": 3, "mode": "standard"},
        max_pool_connections=settings.concurrency + 4,
        signature_version=UNSIGNED if settings.s3_anonymous else None,
        s3={"addressing_style": "path"} if endpoint else {},
        # We check each whole file against the store's digest (fetchers/integrity/verify.py). botocore's own check of
        # every unranged GET would hash the bytes a second time, and some S3-compatible stores send the
        # whole object's checksum with ranged answers too, which it then refuses.
        response_checksum_validation="when_required",
    )
    session = botocore.session.Session()
    session.register_component("data_loader", _service_models())
    if env.get("AWS_PROFILE"):
        session.set_config_variable("profile", env["AWS_PROFILE"])
    keys = [env.get(k) or None for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")]
    if any(keys):  # as boto3's Session does: a partial set is an error botocore names, not the chain
        session.set_credentials(*keys)
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1"
    client = session.create_client("s3", region_name=region, endpoint_url=endpoint, config=config)
    # Ahead of botocore's region redirector: it asks the bucket's region with a HEAD that can be redirected
    # again, without end (a RecursionError) when the store names no region.
    client.meta.events.register_first("needs-retry.s3", refuse_unbounded_redirect)
    return client


def list_objects(client, job: Job) -> list[tuple[str, str, RemoteFile]]:
    """(key, ETag, file) for every object under the prefix."""
    bucket, prefix = split_location(job.ref.location)
    listed: list[tuple[str, str, RemoteFile]] = []
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=f"{prefix}/" if prefix else "")
    budget = ListingBudget(job.uri, job.settings.timeout)
    advertised: dict[str, list[str] | None] = {}
    for page in budget.counted(pages):
        for obj in budget.counted(page.get("Contents", [])):
            key = obj["Key"]
            rel = key[len(prefix) + 1 :] if prefix else key
            if key.endswith("/") and obj["Size"] == 0:
                continue  # a "folder" placeholder some consoles create
            target_path(job.uri, job.dest, rel)  # refuses names that would escape before anything is written
            md5 = _MD5_ETAG.match(obj.get("ETag", ""))
            remote = RemoteFile(rel, int(obj["Size"]), md5=md5.group(1) if md5 else None)
            if job.selects(rel):
                listed.append((key, obj.get("ETag", ""), remote))
                hint = obj.get("ChecksumAlgorithm")
                advertised[key] = [str(a).lower() for a in hint] if isinstance(hint, list) else None
    if not listed:
        raise MaterializeError(
            job.uri, "no objects found under this prefix", "check the bucket and prefix (and the endpoint)"
        )
    check_clashes(job.uri, [f.name for _, _, f in listed])
    if not job.settings.verify_checksums:
        return listed
    return with_store_crcs(client, bucket, listed, advertised, job.settings.concurrency)


def with_store_crcs(
    client,
    bucket: str,
    listed: list[tuple[str, str, RemoteFile]],
    advertised: Mapping[str, list[str] | None],
    workers: int,
) -> list[tuple[str, str, RemoteFile]]:
    """Each object's full-object CRC, where the store keeps one, from a HEAD in checksum mode (listings
    do not carry the value). Objects whose listing names no CRC are not asked; a listing that says
    nothing (some S3-compatible stores) is. A CRC is kept only if the HEAD saw the listed ETag, so that
    it describes the bytes the MD5 and size describe."""
    usable = [name for name in _CRCS if digests.available(name)]
    ask = [
        i
        for i, (key, _, _) in enumerate(listed)
        if usable and (advertised.get(key) is None or any(a in usable for a in advertised[key] or ()))
    ]
    if not ask:
        return listed

    def head(i: int) -> tuple[int, tuple[str, str] | None]:
        key, etag, _ = listed[i]
        answer = client.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
        if str(answer.get("ETag", "")).strip('"') != etag.strip('"'):
            return i, None
        if answer.get("ChecksumType") not in (None, "FULL_OBJECT"):
            return i, None  # a checksum of the parts' checksums: it needs the part layout, so MD5 or size it is
        for name in usable:
            value = answer.get(f"Checksum{name.upper()}")
            if digests.well_formed_crc(name, value):
                return i, (name, value)
        return i, None

    out = list(listed)
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(ask)))) as pool:
        for i, crc in pool.map(head, ask):
            if crc is not None:
                key, etag, f = out[i]
                out[i] = (key, etag, replace(f, crc=crc))
    return out


class S3Backend:
    def download(self, job: Job) -> list[RemoteFile]:
        from s3transfer.manager import TransferConfig, TransferManager  # noqa: PLC0415 - the s3 extra, only for an s3:// source

        client = make_client(job.env, job.settings)
        with error_map.permanent_errors(job.uri, _raise_permanent):
            listed = list_objects(client, job)
        files = [f for _, _, f in listed]
        todo = job.to_fetch(files)
        wanted = {f.name for f in todo}
        listed = [item for item in listed if item[2].name in wanted]
        if not todo:
            return files
        if job.settings.s5cmd != "off":
            binary = s5cmd.find_s5cmd(job.env)
            if binary is None and job.settings.s5cmd == "on":
                raise s5cmd.require_s5cmd(job.uri)
            names = [job.ref.location, str(job.dest), *(f.name for f in todo)]
            if binary is not None and all(s5cmd.scriptable(n) for n in names):
                s5cmd.download_with_s5cmd(job, binary, todo)
                return files
        bucket, _ = split_location(job.ref.location)
        # boto3's own buffer sizes measured best here (bench/bench_s3_download.py); bigger queues only
        # held more of the file in memory. Part size and concurrency stay tunable.
        config = TransferConfig(
            multipart_threshold=job.settings.chunk_bytes,
            multipart_chunksize=job.settings.chunk_bytes,
            max_request_concurrency=job.settings.concurrency,
            num_download_attempts=3,
            io_chunksize=IO_CHUNK,
        )
        streams = OpenBodies(client)
        job.hasher.follow(todo, s3transfer_partials)
        with TransferManager(client, config) as manager:
            futures = []
            for key, etag, f in listed:
                path = target_path(job.uri, job.dest, f.name)
                path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                subscriber = TransferSubscriber(f, etag, job)
                futures.append(manager.download(bucket, key, str(path), subscribers=[subscriber]))
            guard = RateGuard(job.uri, job.settings, granularity=IO_CHUNK)
            try:
                for future in futures:
                    while not future.done():  # s3transfer's result() takes no timeout
                        guard.check(job.progress.done)
                        time.sleep(0.2)
                    future.result()
            except BaseException as err:
                # A trickling body blocks its reading thread for as long as it trickles, and leaving this
                # block waits for every thread: shut their sockets first (a deadline, SIGTERM, any failure).
                streams.shut_all()
                if isinstance(err, Exception):
                    _raise_permanent(job.uri, err)
                raise
        return files

    def is_transient(self, err: BaseException) -> bool:
        if hasattr(err, "transient"):  # s5cmd's failures carry their own verdict
            return bool(err.transient)
        return error_map.is_transient(err, _rules(), _status(err))


@error_map.lazy
def _rules() -> tuple[error_map.Rule, ...]:
    import boto3.exceptions  # noqa: PLC0415 - the s3 extra, only for an s3:// source
    import botocore.exceptions as bc  # noqa: PLC0415 - the s3 extra, only for an s3:// source
    import urllib3.exceptions  # noqa: PLC0415 - the s3 extra, only for an s3:// source

    return (
        error_map.Rule(
            (bc.NoCredentialsError, bc.PartialCredentialsError),
            problem="no AWS credentials found",
            fix="set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY (or a role), or NIM_S3_ANONYMOUS=1 for a public bucket",
        ),
        # Connection, timeout and truncated-body failures of botocore's HTTP layer and of urllib3 below it.
        error_map.Rule(
            (
                bc.HTTPClientError,
                bc.ConnectionError,
                bc.IncompleteReadError,
                bc.ResponseStreamingError,
                boto3.exceptions.RetriesExceededError,
                urllib3.exceptions.ProtocolError,
            ),
            transient=True,
        ),
    )


def _status(err: BaseException) -> int | None:
    response = getattr(err, "response", None)
    if isinstance(response, dict):
        return response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return None


def _raise_permanent(uri: str, err: BaseException) -> None:
    if isinstance(err, StoreRedirect):
        raise MaterializeError(
            uri,
            f"the store redirected to another endpoint ({err.where}), which is not followed",
            "set AWS_ENDPOINT_URL (or AWS_REGION) to where the bucket lives",
        ) from None
    error_map.raise_permanent(uri, err, _rules())
    code = ""
    response = getattr(err, "response", None)
    if isinstance(response, dict):
        code = response.get("Error", {}).get("Code", "")
    status = _status(err)
    if code in ("PermanentRedirect", "TemporaryRedirect", "301", "307") or status in (301, 307):
        where = response.get("Error", {}).get("Endpoint") if isinstance(response, dict) else None
        region = (
            response.get("ResponseMetadata", {}).get("HTTPHeaders", {}) if isinstance(response, dict) else {}
        ).get("x-amz-bucket-region")
        shown = (
            f" ({printable(str(where)[:120])})"
            if where
            else (f" (region {printable(str(region)[:40])})" if region else "")
        )
        raise MaterializeError(
            uri,
            f"the store redirected to another endpoint{shown}, which is not followed",
            "set AWS_ENDPOINT_URL (or AWS_REGION) to where the bucket lives",
        ) from None
    if code == "NoSuchBucket":
        raise MaterializeError(uri, "the bucket does not exist", "check the bucket name and AWS_ENDPOINT_URL") from None
    if code in ("NoSuchKey", "404") or status == 404:
        raise MaterializeError(uri, "an object disappeared or does not exist (404)", "check the prefix") from None
    if status in (401, 403):
        raise MaterializeError(
            uri, f"access denied ({code or status})", "check the credentials and the bucket policy"
        ) from None


class S3Fetcher(CachedFetcher):
    def backend(self) -> S3Backend:
        return S3Backend()
