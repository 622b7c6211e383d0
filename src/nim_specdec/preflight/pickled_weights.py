"""Tensor names and shapes of a `pytorch_model.bin`, read without unpickling and without torch.

Many published drafts (the EAGLE authors' among them) ship their weights as `torch.save`
files: a zip archive whose `data.pkl` member is a small pickle of the state dict, the
tensor data living in other members. `pickletools.genops` walks that pickle's opcodes
without executing any of them, which is safe on untrusted files and needs no torch. In a
state dict every tensor is a key string followed by a call to torch's `_rebuild_tensor_v2`
(or `_rebuild_parameter`), whose arguments carry the storage type and the shape.
"""

from __future__ import annotations

import pickletools
import zipfile
from pathlib import Path

from nim_specdec.files.regular_file import folder_root, open_inside
from nim_specdec.preflight.safetensors_header import HeaderError, TensorInfo

_REBUILDERS = ("torch._utils _rebuild_tensor_v2", "torch._utils _rebuild_parameter")
_STORAGE_DTYPES = {
    "FloatStorage": ("F32", 4),
    "DoubleStorage": ("F64", 8),
    "HalfStorage": ("F16", 2),
    "BFloat16Storage": ("BF16", 2),
    "LongStorage": ("I64", 8),
    "IntStorage": ("I32", 4),
    "ShortStorage": ("I16", 2),
    "CharStorage": ("I8", 1),
    "ByteStorage": ("U8", 1),
    "BoolStorage": ("BOOL", 1),
}
_INTS = ("BININT1", "BININT2", "BININT", "LONG1", "INT")
_TUPLES = ("TUPLE", "TUPLE1", "TUPLE2", "TUPLE3", "EMPTY_TUPLE")
_MEMO_PUT = ("BINPUT", "LONG_BINPUT", "MEMOIZE", "PUT")
_MEMO_GET = ("BINGET", "LONG_BINGET", "GET")
_MAX_PICKLE_BYTES = 64 * 1024 * 1024


def _tensors_from_pickle(data: bytes) -> dict[str, TensorInfo]:
    tensors: dict[str, TensorInfo] = {}
    memo: dict[int, str] = {}  # memo slot -> the GLOBAL stored there ("" for anything else)
    top = ""  # the GLOBAL the last opcode pushed, if it pushed one
    pending = None  # a string that may be a state-dict key
    current = None  # the key whose tensor's arguments are being read
    dtype, elem, stage, dims = "", 0, "", []
    for op, arg, _ in pickletools.genops(data):
        name = op.name
        if name in _MEMO_PUT:  # storing in the memo leaves the stack as it is
            memo[len(memo) if name == "MEMOIZE" else arg] = top
            continue
        top = arg if name == "GLOBAL" else memo.get(arg, "") if name in _MEMO_GET else ""
        if pending is not None:
            if top in _REBUILDERS:
                current, dtype, elem, stage = pending, "", 0, ""
            pending = None
        if current is None:
            if name in ("BINUNICODE", "SHORT_BINUNICODE", "UNICODE", "BINUNICODE8"):
                pending = arg
            continue
        storage = top.split(" ", 1)[1] if top.startswith("torch ") else ""
        if storage in _STORAGE_DTYPES:
            dtype, elem = _STORAGE_DTYPES[storage]
        elif name == "BINPERSID":
            stage, dims = "offset", []
        elif stage == "offset" and name in _INTS:
            stage = "shape"
        elif stage == "shape" and name in _INTS:
            dims.append(int(arg))
        elif stage == "shape" and name in _TUPLES:
            size = elem
            for dim in dims:
                size *= dim
            tensors[current] = TensorInfo(dtype, tuple(dims), size)
            current, stage = None, ""
    return tensors


def read_pickled_tensors(path: Path, root: Path | None = None) -> dict[str, TensorInfo] | None:
    """The state dict's tensors; None for a legacy (non-zip) torch file, whose layout is not read. The file
    lies inside the model folder `root` (by default its own folder): a link out of it is not followed."""
    try:
        # a FIFO would block the open, a device read without end, a link out of the folder read a secret
        with open_inside(path, folder_root(root if root is not None else Path(path).parent)) as fh:
            if not zipfile.is_zipfile(fh):
                return None
            with zipfile.ZipFile(fh) as archive:
                members = [m for m in archive.infolist() if m.filename.endswith("data.pkl")]
                if len(members) != 1 or members[0].file_size > _MAX_PICKLE_BYTES:
                    raise HeaderError(f"{path}: not a torch.save archive with one data.pkl")
                data = archive.read(members[0])
    except OSError as err:
        raise HeaderError(f"{path}: cannot be read as a torch.save archive ({err.strerror})") from None
    except zipfile.BadZipFile:
        raise HeaderError(f"{path}: cannot be read as a torch.save archive (not a valid zip file)") from None
    try:
        return _tensors_from_pickle(data)
    except ValueError:  # pickletools' complaint about a malformed opcode stream (it may quote the bytes)
        raise HeaderError(f"{path}: data.pkl is not a valid pickle") from None
