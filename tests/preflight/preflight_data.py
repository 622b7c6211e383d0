"""Test data for the pre-flight tests: real config.json files of public models, safetensors
files with real headers over sparse (unwritten) data, and the tensor layouts of EAGLE drafts.

The `model_dir` fixture lives here, not in a conftest.py: other tests of the project import
their own conftest by name, which a second conftest.py on the path would shadow.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Callable, Mapping

import pytest

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "model_configs"
ELEMENT_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I8": 1, "U8": 1, "BOOL": 1, "F8_E4M3": 1}

Tensors = Mapping[str, tuple[str, tuple[int, ...]]]


def write_safetensors(path: Path, tensors: Tensors) -> int:
    """A safetensors file with these tensors; the data is a sparse hole, so size costs no disk."""
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        size = ELEMENT_BYTES[dtype]
        for dim in shape:
            size *= dim
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)  # the format pads the header to 8 bytes
    with path.open("wb") as fh:
        fh.write(struct.pack("<Q", len(raw)) + raw)
        fh.truncate(8 + len(raw) + offset)
    return offset


def load_config(name: str) -> dict:
    path = CONFIGS / name / "config.json"
    if not path.is_file():
        pytest.fail(f"test data missing: {path.relative_to(CONFIGS.parents[1])}")
    return json.loads(path.read_text())


@pytest.fixture
def model_dir(tmp_path: Path) -> Callable[..., Path]:
    """model_dir(name, config, tensors=None, shards=1) -> a directory with config.json and weights."""

    def make(name: str, config: Mapping, tensors: Tensors | None = None, shards: int = 1) -> Path:
        directory = tmp_path / name
        directory.mkdir()
        (directory / "config.json").write_text(json.dumps(config))
        if tensors is None:
            return directory
        if shards == 1:
            write_safetensors(directory / "model.safetensors", tensors)
            return directory
        names = list(tensors)
        weight_map, total = {}, 0
        for i in range(shards):
            shard = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
            part = {n: tensors[n] for n in names[i::shards]}
            total += write_safetensors(directory / shard, part)
            weight_map.update({n: shard for n in part})
        index = {"metadata": {"total_size": total}, "weight_map": weight_map}
        (directory / "model.safetensors.index.json").write_text(json.dumps(index))
        return directory

    return make


def eagle3_tensors(
    hidden: int,
    vocab: int,
    draft_vocab: int,
    target_hidden: int | None = None,
    d2t: bool = True,
    heads: int = 32,
    kv_heads: int = 8,
    intermediate: int = 14336,
) -> dict:
    """The tensor layout of a published EAGLE3 draft (one decoder layer fed by three target layers)."""
    th = target_hidden or hidden
    head_dim = hidden // heads
    tensors = {
        "fc.weight": ("BF16", (hidden, 3 * th)),
        "midlayer.hidden_norm.weight": ("BF16", (hidden,)),
        "midlayer.input_layernorm.weight": ("BF16", (hidden,)),
        "midlayer.self_attn.q_proj.weight": ("BF16", (heads * head_dim, 2 * hidden)),
        "midlayer.self_attn.k_proj.weight": ("BF16", (kv_heads * head_dim, 2 * hidden)),
        "midlayer.self_attn.v_proj.weight": ("BF16", (kv_heads * head_dim, 2 * hidden)),
        "midlayer.self_attn.o_proj.weight": ("BF16", (hidden, heads * head_dim)),
        "midlayer.post_attention_layernorm.weight": ("BF16", (hidden,)),
        "midlayer.mlp.gate_proj.weight": ("BF16", (intermediate, hidden)),
        "midlayer.mlp.up_proj.weight": ("BF16", (intermediate, hidden)),
        "midlayer.mlp.down_proj.weight": ("BF16", (hidden, intermediate)),
        "norm.weight": ("BF16", (hidden,)),
        "lm_head.weight": ("BF16", (draft_vocab, hidden)),
    }
    if d2t:
        tensors["d2t"] = ("I64", (draft_vocab,))
        tensors["t2d"] = ("BOOL", (vocab,))
    return tensors


def eagle1_tensors(hidden: int, heads: int = 32, kv_heads: int = 8, intermediate: int = 14336) -> dict:
    """The tensor layout of an EAGLE-1 draft: fc takes the hidden state and the token embedding."""
    head_dim = hidden // heads
    return {
        "fc.weight": ("BF16", (hidden, 2 * hidden)),
        "layers.0.self_attn.q_proj.weight": ("BF16", (heads * head_dim, hidden)),
        "layers.0.self_attn.k_proj.weight": ("BF16", (kv_heads * head_dim, hidden)),
        "layers.0.self_attn.v_proj.weight": ("BF16", (kv_heads * head_dim, hidden)),
        "layers.0.self_attn.o_proj.weight": ("BF16", (hidden, heads * head_dim)),
        "layers.0.mlp.gate_proj.weight": ("BF16", (intermediate, hidden)),
        "layers.0.mlp.up_proj.weight": ("BF16", (intermediate, hidden)),
        "layers.0.mlp.down_proj.weight": ("BF16", (hidden, intermediate)),
        "layers.0.post_attention_layernorm.weight": ("BF16", (hidden,)),
    }
