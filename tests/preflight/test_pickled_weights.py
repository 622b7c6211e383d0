"""Names and shapes of torch.save files, read from the pickle's opcodes without unpickling."""

from __future__ import annotations

import zipfile
from collections import OrderedDict

import pytest
import torch

from nim_specdec.preflight.checkpoint import read_checkpoint
from nim_specdec.preflight.pickled_weights import read_pickled_tensors
from nim_specdec.preflight.safetensors_header import HeaderError, TensorInfo


def test_state_dict_names_dtypes_and_shapes(tmp_path):
    state = OrderedDict(
        [
            ("fc.weight", torch.zeros(8, 16, dtype=torch.bfloat16)),
            ("fc.bias", torch.nn.Parameter(torch.zeros(8, dtype=torch.float16))),
            ("layers.0.self_attn.q_proj.weight", torch.zeros(8, 8)),
            ("d2t", torch.zeros(5, dtype=torch.int64)),
            ("t2d", torch.zeros(300, dtype=torch.bool)),
            ("scale", torch.tensor(2.0)),
        ]
    )
    torch.save(state, tmp_path / "pytorch_model.bin")
    assert read_pickled_tensors(tmp_path / "pytorch_model.bin") == {
        "fc.weight": TensorInfo("BF16", (8, 16), 256),
        "fc.bias": TensorInfo("F16", (8,), 16),
        "layers.0.self_attn.q_proj.weight": TensorInfo("F32", (8, 8), 256),
        "d2t": TensorInfo("I64", (5,), 40),
        "t2d": TensorInfo("BOOL", (300,), 300),
        "scale": TensorInfo("F32", (), 4),
    }


def test_shards_are_merged_and_sized_by_their_files(tmp_path):
    torch.save({"a.weight": torch.zeros(3)}, tmp_path / "pytorch_model-00001-of-00002.bin")
    torch.save({"b.weight": torch.zeros(4, dtype=torch.float16)}, tmp_path / "pytorch_model-00002-of-00002.bin")
    ckpt = read_checkpoint(tmp_path)
    assert set(ckpt.tensors) == {"a.weight", "b.weight"}
    assert ckpt.total_bytes == sum(p.stat().st_size for p in tmp_path.glob("*.bin"))


def test_the_legacy_format_has_no_names(tmp_path):
    torch.save({"a": torch.zeros(3)}, tmp_path / "pytorch_model.bin", _use_new_zipfile_serialization=False)
    assert read_checkpoint(tmp_path).tensors is None


def test_nothing_is_executed(tmp_path):
    # A pickle that would run code if it were loaded is only walked, opcode by opcode.
    path = tmp_path / "pytorch_model.bin"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("archive/data.pkl", b"cos\nsystem\n(S'touch " + str(tmp_path / "ran").encode() + b"'\ntR.")
    assert read_pickled_tensors(path) == {}
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize(
    "members, problem",
    [
        ({"archive/other": b"x"}, "not a torch.save archive with one data.pkl"),
        ({"archive/data.pkl": b"\x80\x02}q\x00"}, "data.pkl is not a valid pickle"),
    ],
)
def test_broken_archives_are_one_error_naming_the_file(tmp_path, members, problem):
    path = tmp_path / "pytorch_model.bin"
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    with pytest.raises(HeaderError) as err:
        read_pickled_tensors(path)
    assert str(err.value).startswith(f"{path}: {problem}")
