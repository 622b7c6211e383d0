"""The digests a store can vouch for, computed over a file on disk and written the way the store writes them.

MD5 and SHA-256 are hex, as ETags, GCS listings and Hub LFS pointers give them. The CRCs are S3's
full-object checksums (`x-amz-checksum-*`): the big-endian value in base64. S3 keeps one of them for
every object written since 2025 (CRC64NVME unless the writer chose another; SDKs send CRC32 by default),
multipart objects included, where the ETag is no MD5 of the bytes. A CRC costs a fraction of MD5 on
this hardware (bench/bench_s3_download.py), so a backend prefers it when the store gives one.

GCS keeps a CRC32C of every object, composed ones included.

CRC32C and CRC64NVME come from awscrt, the CRT that botocore itself uses for them (`boto3[crt]`, in
the s3 extra); CRC32C also from google-crc32c, which google-cloud-storage brings. Without them,
`available` says no and the backend falls back to the MD5.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import zlib
from pathlib import Path
from typing import Callable, Protocol

from nim_specdec.files.regular_file import open_regular

_READ = 8 * 1024 * 1024


class Digest(Protocol):
    def update(self, data: bytes) -> None: ...
    def result(self) -> str: ...


class _Hex:
    def __init__(self, name: str) -> None:
        self._h = hashlib.new(name)

    def update(self, data: bytes) -> None:
        self._h.update(data)  # hashlib releases the GIL on large buffers: threads hash in parallel

    def result(self) -> str:
        return self._h.hexdigest()


class _Crc:
    def __init__(self, step: Callable[[bytes, int], int], width: int) -> None:
        self._step, self._width, self._value = step, width, 0

    def update(self, data: bytes) -> None:
        self._value = self._step(data, self._value)

    def result(self) -> str:
        return base64.b64encode(self._value.to_bytes(self._width, "big")).decode()


def _crt(name: str, width: int) -> Callable[[], Digest]:
    def make() -> Digest:
        from awscrt import checksums  # noqa: PLC0415 - the s3 extra's (boto3[crt]), only where present

        return _Crc(getattr(checksums, name), width)

    return make


def _crc32c() -> Digest:
    if importlib.util.find_spec("awscrt") is not None:
        return _crt("crc32c", 4)()
    import google_crc32c  # noqa: PLC0415 - the gcs extra's, only without awscrt

    return _Crc(lambda data, value: google_crc32c.extend(value, data), 4)


# name -> (factory, the modules that can provide it); names are the lower-case forms of S3's ChecksumAlgorithm values.
ALGORITHMS: dict[str, tuple[Callable[[], Digest], tuple[str, ...]]] = {
    "sha256": (lambda: _Hex("sha256"), ()),
    "md5": (lambda: _Hex("md5"), ()),
    "crc32": (lambda: _Crc(zlib.crc32, 4), ()),
    "crc32c": (_crc32c, ("awscrt", "google_crc32c")),
    "crc64nvme": (_crt("crc64nvme", 8), ("awscrt",)),
}
CRC_WIDTH = {"crc32": 4, "crc32c": 4, "crc64nvme": 8}


def available(name: str) -> bool:
    entry = ALGORITHMS.get(name)
    if entry is None:
        return False
    modules = entry[1]
    return not modules or any(importlib.util.find_spec(m) is not None for m in modules)


def well_formed_crc(name: str, value: object) -> bool:
    """A full-object CRC as S3 writes it: base64 of exactly the algorithm's width (a composite
    checksum of parts, `...-N`, is not one)."""
    if not isinstance(value, str) or name not in CRC_WIDTH or len(value) > 16:
        return False
    try:
        return len(base64.b64decode(value, validate=True)) == CRC_WIDTH[name]
    except ValueError:
        return False


def file_digest(path: Path, name: str) -> str:
    d = ALGORITHMS[name][0]()
    with open_regular(path, follow=False) as fh:  # a downloaded file is never a link
        while chunk := fh.read(_READ):
            d.update(chunk)
    return d.result()
