"""Reading tensor names, shapes and sizes from safetensors headers, never the data."""

from __future__ import annotations

import struct

import pytest
from preflight_data import model_dir, write_safetensors  # noqa: F401 - model_dir is a fixture

from nim_specdec.preflight.checkpoint import read_checkpoint
from nim_specdec.preflight.safetensors_header import HeaderError, TensorInfo, read_header


def test_one_file_gives_names_shapes_and_byte_sizes(tmp_path):
    path = tmp_path / "model.safetensors"
    write_safetensors(path, {"fc.weight": ("BF16", (4096, 12288)), "d2t": ("I64", (32000,))})
    assert read_header(path) == {
        "fc.weight": TensorInfo("BF16", (4096, 12288), 4096 * 12288 * 2),
        "d2t": TensorInfo("I64", (32000,), 32000 * 8),
    }


def test_sharded_checkpoint_is_read_through_its_index(model_dir):
    tensors = {f"layers.{i}.w": ("F16", (256, 256)) for i in range(10)}
    directory = model_dir("sharded", {}, tensors, shards=3)
    ckpt = read_checkpoint(directory)
    assert set(ckpt.tensors) == set(tensors)
    assert ckpt.total_bytes == 10 * 256 * 256 * 2
    assert ckpt.files == (
        "model-00001-of-00003.safetensors",
        "model-00002-of-00003.safetensors",
        "model-00003-of-00003.safetensors",
    )


def test_files_without_an_index_are_all_read(tmp_path):
    write_safetensors(tmp_path / "a.safetensors", {"x": ("F32", (10,))})
    write_safetensors(tmp_path / "b.safetensors", {"y": ("F8_E4M3", (7, 3))})
    ckpt = read_checkpoint(tmp_path)
    assert ckpt.total_bytes == 40 + 21
    assert ckpt.has_tensor("y") and not ckpt.has_tensor("z")


def test_tensor_lookup_matches_whole_name_components(tmp_path):
    write_safetensors(tmp_path / "m.safetensors", {"model.d2t": ("I64", (5,)), "xd2t": ("I64", (9,))})
    ckpt = read_checkpoint(tmp_path)
    assert ckpt.find("d2t").shape == (5,)
    assert ckpt.find("t2d") is None


def test_legacy_torch_files_are_counted_by_size_without_names(tmp_path):
    (tmp_path / "pytorch_model.bin").write_bytes(b"\0" * 1234)
    ckpt = read_checkpoint(tmp_path)
    assert (ckpt.total_bytes, ckpt.tensors, ckpt.has_tensor("d2t")) == (1234, None, None)


def test_a_directory_without_weights_has_no_checkpoint(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    assert read_checkpoint(tmp_path) is None


@pytest.mark.parametrize(
    "content, problem",
    [
        (b"\x01\x02", "shorter than a safetensors header"),
        (struct.pack("<Q", 2**40), "declares a 1099511627776-byte header, not a safetensors file"),
        (struct.pack("<Q", 100) + b"{}", "truncated safetensors header"),
        (struct.pack("<Q", 5) + b"{nope", "the safetensors header is not valid JSON"),
        (struct.pack("<Q", 2) + b"[]", "the safetensors header is not a JSON object"),
        (struct.pack("<Q", 14) + b'{"w": {"a":1}}', "a tensor has no valid dtype, shape and data_offsets"),
    ],
)
def test_a_broken_header_is_one_error_naming_the_file(tmp_path, content, problem):
    path = tmp_path / "model.safetensors"
    path.write_bytes(content)
    with pytest.raises(HeaderError) as err:
        read_checkpoint(tmp_path)
    assert str(err.value) == f"{path}: {problem}"


def test_an_index_without_weight_map_is_an_error(tmp_path):
    (tmp_path / "model.safetensors.index.json").write_text('{"metadata": {}}')
    with pytest.raises(HeaderError, match="not a valid safetensors index"):
        read_checkpoint(tmp_path)
