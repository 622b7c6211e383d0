"""The weights of one model directory as their headers describe them: files, tensors, total size.

safetensors files (one, several, or the shards of an index) are read through their headers;
`pytorch_model*.bin` files through the opcodes of their pickled state dict. Neither reads
any weight bytes, so a directory of any size is described in milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from nim_specdec.preflight.config_file import index_shards
from nim_specdec.preflight.safetensors_header import INDEX_NAME, TensorInfo, read_headers


@dataclass(frozen=True)
class Checkpoint:
    """What the weight files of one model directory declare."""

    files: tuple[str, ...]
    total_bytes: int
    # None when the names could not be read (a torch file in the legacy, non-zip format).
    tensors: dict[str, TensorInfo] | None = field(default=None)

    def has_tensor(self, suffix: str) -> bool | None:
        """Whether a tensor named `suffix` (or ending in `.suffix`) exists; None when names are unknown."""
        if self.tensors is None:
            return None
        return any(name == suffix or name.endswith("." + suffix) for name in self.tensors)

    def find(self, suffix: str) -> TensorInfo | None:
        for name, info in (self.tensors or {}).items():
            if name == suffix or name.endswith("." + suffix):
                return info
        return None


def read_checkpoint(directory: Path, where: str = "model weights") -> Checkpoint | None:
    """All tensors a model directory's weights declare; None when it holds no weight files."""
    if (directory / INDEX_NAME).is_file():
        files, _ = index_shards(directory, where)
    else:
        files = sorted(directory.glob("*.safetensors"))
    if files:
        tensors: dict[str, TensorInfo] = read_headers(files, directory)
        total = sum(info.nbytes for info in tensors.values())
        return Checkpoint(tuple(p.name for p in files), total, tensors)
    legacy = sorted(directory.glob("pytorch_model*.bin"))
    if not legacy:
        return None
    from nim_specdec.preflight.pickled_weights import read_pickled_tensors  # noqa: PLC0415 - torch .bin files are rare: +13 modules (~8 ms) a plan

    found: dict[str, TensorInfo] | None = {}
    for path in legacy:
        part = read_pickled_tensors(path, directory)
        found = None if part is None or found is None else {**found, **part}
    return Checkpoint(tuple(p.name for p in legacy), sum(p.stat().st_size for p in legacy), found)
