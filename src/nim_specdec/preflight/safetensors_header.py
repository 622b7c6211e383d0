"""Tensor names, shapes and byte sizes of a checkpoint, read from safetensors headers only.

A safetensors file starts with an 8-byte little-endian length N and N bytes of JSON that
name every tensor with its dtype, shape and byte range. Reading that header costs one
small read per file whatever the size of the weights, which is what lets the pre-flight
checks run in milliseconds before vLLM loads anything. No torch, no safetensors library.

A sharded checkpoint's `model.safetensors.index.json` names its shards in its weight map (read by
preflight/config_file.py, which keeps every shard inside the model folder).
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from nim_specdec.config.jsonvalue import FILE_INT_DIGITS, loads
from nim_specdec.errors import MaterializeError
from nim_specdec.files.regular_file import folder_root, open_inside

INDEX_NAME = "model.safetensors.index.json"
# A header is metadata; anything this large is a corrupt or hostile file, not a checkpoint.
MAX_HEADER_BYTES = 100 * 1024 * 1024
# Over all files of one model: the largest public checkpoints' headers add up to a few tens of megabytes.
MAX_TOTAL_HEADER_BYTES = 256 * 1024 * 1024
MAX_DIM = 2**48
MAX_OFFSET = 2**60


class HeaderError(ValueError):
    """A weights file whose header cannot be read; the message names the file."""


@dataclass(frozen=True)
class TensorInfo:
    dtype: str
    shape: tuple[int, ...]
    nbytes: int


def _bounded(value: object, limit: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= limit:
        raise ValueError(f"{value!r} is not a whole number from 0 to {limit}")
    return value


def parse_header(raw: bytes, where: str, data_bytes: int | None = None) -> dict[str, TensorInfo]:
    """Turn a header's JSON bytes into tensor infos (pure; `where` names the file in errors). `data_bytes`:
    how many bytes follow the header in the file; every tensor must end within them."""
    try:
        doc = loads(raw, where, MaterializeError, FILE_INT_DIGITS)
    except MaterializeError:
        raise HeaderError(f"{where}: the safetensors header is not valid JSON") from None
    if not isinstance(doc, dict):
        raise HeaderError(f"{where}: the safetensors header is not a JSON object")
    tensors: dict[str, TensorInfo] = {}
    for name, entry in doc.items():
        if name == "__metadata__":
            continue
        try:
            start, end = entry["data_offsets"]
            shape = tuple(_bounded(d, MAX_DIM) for d in entry["shape"])
            start, end = _bounded(start, MAX_OFFSET), _bounded(end, MAX_OFFSET)
            if end < start or not isinstance(entry["dtype"], str):
                raise ValueError("bad range or dtype")
            if data_bytes is not None and end > data_bytes:
                raise HeaderError(
                    f"{where}: a tensor ends at byte {end}, past the end of the file ({data_bytes} bytes of data)"
                )
            tensors[name] = TensorInfo(entry["dtype"], shape, end - start)
        except (KeyError, TypeError, ValueError) as err:
            if isinstance(err, HeaderError):
                raise
            raise HeaderError(f"{where}: a tensor has no valid dtype, shape and data_offsets") from None
    return tensors


def read_header(path: Path, limit: int = MAX_HEADER_BYTES, root: Path | None = None) -> dict[str, TensorInfo]:
    """Read one file's header: 8 bytes of length, then that many bytes of JSON (at most `limit`). Every
    tensor's bytes must lie inside the file: offsets past its end are a forged or truncated file. The file
    lies inside the model folder `root` (by default its own folder): a link out of it is not followed."""
    return _read_header(path, limit, root)[0]


def _read_header(path: Path, limit: int, root: Path | None) -> tuple[dict[str, TensorInfo], int]:
    try:
        # a FIFO would block the open, /dev/zero read without end, a link out of the folder read a secret
        with open_inside(path, folder_root(root if root is not None else Path(path).parent)) as fh:
            size = os.fstat(fh.fileno()).st_size
            prefix = fh.read(8)
            if len(prefix) < 8:
                raise HeaderError(f"{path}: shorter than a safetensors header")
            (length,) = struct.unpack("<Q", prefix)
            if length > MAX_HEADER_BYTES:
                raise HeaderError(f"{path}: declares a {length}-byte header, not a safetensors file")
            if length > limit:
                raise HeaderError(
                    f"{path}: its header would take the safetensors headers of this model past "
                    f"{MAX_TOTAL_HEADER_BYTES} bytes in all, far beyond any checkpoint's"
                )
            raw = fh.read(length)
    except OSError as err:
        raise HeaderError(f"{path}: cannot be read ({err.strerror})") from None
    if len(raw) < length:
        raise HeaderError(f"{path}: truncated safetensors header")
    tensors = parse_header(raw, str(path), size - 8 - length)
    return tensors, length


def read_headers(paths: Iterable[Path], root: Path | None = None) -> dict[str, TensorInfo]:
    """Every file's tensors, the header bytes summed over all files bounded by MAX_TOTAL_HEADER_BYTES
    (a per-file cap alone lets thousands of shards of large headers cost minutes and gigabytes)."""
    tensors: dict[str, TensorInfo] = {}
    left = MAX_TOTAL_HEADER_BYTES
    for path in paths:
        found, length = _read_header(path, min(left, MAX_HEADER_BYTES), root)
        left -= length
        tensors.update(found)
    return tensors
