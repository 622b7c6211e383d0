"""Reading a model's `config.json` and `model.safetensors.index.json` as files from a store: inside the model
folder (a link out of it is refused), bounded in size, strict JSON, and the figures the launcher computes with
checked, so that a bad file is one line (exit 3) naming it instead of a crash somewhere in the arithmetic.
A config.json may hold NaN and Infinity, as Python's json module writes them (transformers saves Nemotron-H's
`time_step_limit` as [0.0, Infinity]; transformers and vLLM read it back): the JSON is taken as they take it,
and the figures the launcher computes with are checked finite (`count_problem`, `_rope_problem`).
No message quotes what the file holds: a file that is not what it should be may hold anything.
"""

from __future__ import annotations

import errno
import math
import os
import stat
from pathlib import Path
from typing import Any, Mapping

from nim_specdec.errors import MaterializeError
from nim_specdec.files.regular_file import folder_root, read_inside, read_json_inside
from nim_specdec.preflight.model_config import MAX_LEN_KEYS
from nim_specdec.preflight.safetensors_header import INDEX_NAME, HeaderError

# A config.json is a few KB; an index lists one line per tensor. Anything far larger is not one.
MAX_CONFIG_BYTES = 16 * 1024 * 1024
MAX_INDEX_BYTES = 64 * 1024 * 1024
_FIX = "replace the file (re-download the model, or remove its cache entry)"
# Sizes and counts the pre-flight checks compute with: whole numbers, and far below 2**48.
_COUNTS = (
    "hidden_size",
    "d_model",
    "n_embd",
    "vocab_size",
    "padded_vocab_size",
    "num_hidden_layers",
    "n_layer",
    "num_layers",
    "num_attention_heads",
    "n_head",
    "num_key_value_heads",
    "num_kv_heads",
    "head_dim",
    "kv_lora_rank",
    "qk_rope_head_dim",
    "intermediate_size",
    "full_attention_interval",
    "draft_vocab_size",
    "target_hidden_size",
    "num_nextn_predict_layers",
    "mtp_num_hidden_layers",
    "num_mtp_modules",
    "num_mtp_layers",
    "n_predict",
    *MAX_LEN_KEYS,
)
_NESTED = ("text_config", "transformer_layer_config", "mtp_config")
MAX_COUNT = 2**48


def read_bounded(path: Path, limit: int, where: str, root: Path | None = None) -> bytes:
    """The file's bytes; a link is read where it points only inside the model folder `root` (by default the
    file's own folder; a Hub snapshot's links into its blobs), and never a non-file."""
    try:
        return read_inside(path, folder_root(root if root is not None else Path(path).parent), limit)
    except OSError as err:
        if err.errno == errno.EFBIG:
            raise MaterializeError(where, f"{path} {err.strerror}, not a model's metadata", _FIX) from None
        if err.errno == errno.EXDEV:
            raise MaterializeError(where, f"{path} {err.strerror}", "replace the link with the file itself") from None
        if err.errno == errno.EINVAL:
            raise MaterializeError(where, f"{path} {err.strerror}", _FIX) from None
        raise MaterializeError(
            where, f"{path} cannot be read ({err.strerror})", "check the file and its permissions"
        ) from None


def count_problem(cfg: Mapping[str, Any]) -> str | None:
    """Why the figures of a config (and of its nested configs) cannot be computed with, or None."""
    for section_name, section in [("", cfg), *((k, cfg.get(k)) for k in _NESTED if k in cfg)]:
        prefix = f"{section_name}." if section_name else ""
        if section is None:
            continue
        if not isinstance(section, Mapping):
            return f"{prefix.rstrip('.')} is not a JSON object"
        for key in _COUNTS:
            value = section.get(key)
            if value is None:
                continue
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or value != int(value)
                or not 0 <= value <= MAX_COUNT
            ):
                return f"{prefix}{key} is not a whole number from 0 to 2**48"
        for key in ("rope_scaling", "rope_parameters"):  # transformers' old name and its successor
            problem = _rope_problem(f"{prefix}{key}", section.get(key))
            if problem:
                return problem
        for key in ("architectures", "layer_types"):
            if section.get(key) is not None and not isinstance(section.get(key), list):
                return f"{prefix}{key} is not a JSON list"
        if any(not isinstance(a, str) for a in section.get("architectures") or ()):
            return f"{prefix}architectures holds something other than class names (strings)"
    return None


def _rope_problem(where: str, rope: Any) -> str | None:
    """A rope section is an object whose `factor`, if any, is a positive number; rope_parameters may hold
    one such object per layer type (`{"full_attention": {...}, "sliding_attention": {...}}`)."""
    if rope is None:
        return None
    if not isinstance(rope, Mapping):
        return f"{where} is not a JSON object"
    factor = rope.get("factor")
    if factor is not None and (
        isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 0 < factor <= 1e6
    ):
        return f"{where}.factor is not a positive number up to 1e6"
    for key, value in rope.items():
        if isinstance(value, Mapping):
            problem = _rope_problem(f"{where}.{key}", value)
            if problem:
                return problem
    return None


def read_model_config(directory: Path, where: str) -> dict[str, Any]:
    """`directory/config.json` as a dict; MaterializeError (exit 3) naming the file when it is not a usable one."""
    path = Path(directory) / "config.json"
    try:
        present = path.is_file()
    except OSError as err:  # the folder may not be entered by this user
        raise MaterializeError(
            where, f"{path} cannot be read ({err.strerror})", "check the folder, the file and their permissions"
        ) from None
    if not present:
        raise MaterializeError(
            where, f"{directory} has no config.json", "point it at the model directory (config.json + weights)"
        )
    data = read_json_inside(path, folder_root(directory), MAX_CONFIG_BYTES, MaterializeError, where, python_floats=True)
    if not isinstance(data, dict):
        raise MaterializeError(where, f"{path} is not a JSON object", _FIX)
    problem = count_problem(data)
    if problem:
        raise MaterializeError(where, f"{path}: {problem}", _FIX)
    return data


def index_shards(directory: Path, where: str) -> tuple[list[Path], int | None]:
    """The shard files a safetensors index names, each inside `directory`, and its stated total size.
    A bad index is a HeaderError naming it, as a bad weights file is."""
    path = Path(directory) / INDEX_NAME
    try:
        doc = read_json_inside(path, folder_root(directory), MAX_INDEX_BYTES, MaterializeError, where)
    except MaterializeError as err:
        raise HeaderError(f"{path}: not a valid safetensors index ({err.problem})") from None
    weight_map = doc.get("weight_map") if isinstance(doc, dict) else None
    if not isinstance(weight_map, dict) or not weight_map:
        raise HeaderError(f"{path}: not a valid safetensors index (no weight_map)")
    root = folder_root(directory)
    shards = []
    for name in sorted({v if isinstance(v, str) else "" for v in weight_map.values()}):
        shard = Path(directory) / name
        parts = name.replace("\\", "/").split("/")
        if (
            not name
            or name.startswith("/")
            or ".." in parts
            or "\x00" in name
            or os.path.commonpath([root, os.path.realpath(shard)]) != root
        ):
            raise HeaderError(f"{path}: names a weight file outside the model folder")
        shards.append(shard)
    metadata = doc.get("metadata")
    total = metadata.get("total_size") if isinstance(metadata, dict) else None
    ok = isinstance(total, int) and not isinstance(total, bool) and 0 < total <= 2**60
    held = _bytes_held(shards)
    if ok and held is not None and total > held:
        raise HeaderError(
            f"{path}: states total_size {total} but its weight files hold {held} bytes in all (truncated or forged)"
        )
    return shards, (total if ok else None)


def _bytes_held(files: list[Path]) -> int | None:
    """The files' sizes added up; None when one is missing or not a regular file (reported elsewhere)."""
    total = 0
    for path in files:
        try:
            st = os.stat(path)
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        total += st.st_size
    return total
