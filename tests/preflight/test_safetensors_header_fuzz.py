"""Whatever bytes a weights file holds, reading its header gives tensors or one HeaderError."""

from __future__ import annotations

import json
import struct
import zipfile

from hypothesis import given, settings
from hypothesis import strategies as st

from nim_specdec.preflight.pickled_weights import read_pickled_tensors
from nim_specdec.preflight.safetensors_header import HeaderError, parse_header, read_header


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_any_header_bytes(raw):
    try:
        tensors = parse_header(raw, "f")
    except HeaderError as err:
        assert str(err).startswith("f: ")
    else:  # only a JSON object is a header; its tensors are its keys but the metadata
        doc = json.loads(raw)
        assert isinstance(doc, dict) and set(tensors) == set(doc) - {"__metadata__"}


@settings(max_examples=100, deadline=None)
@given(
    st.recursive(
        st.none() | st.integers() | st.text(max_size=5),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    )
)
def test_any_json_header(doc):
    try:
        tensors = parse_header(json.dumps({"w": doc}).encode(), "f")
    except HeaderError as err:
        assert str(err) == "f: a tensor has no valid dtype, shape and data_offsets"
    else:
        # Accepted only with all three fields usable: the size is what the offsets span.
        start, end = doc["data_offsets"]
        assert tensors["w"].shape == tuple(int(d) for d in doc["shape"]) and tensors["w"].nbytes == int(end) - int(
            start
        )


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_any_pickle_bytes(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("p") / "pytorch_model.bin"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("archive/data.pkl", b"\x80\x02" + data)
    try:
        assert isinstance(read_pickled_tensors(path), dict)
    except HeaderError as err:
        assert str(err).startswith(str(path))


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=0, max_value=2**64 - 1), st.binary(max_size=64))
def test_any_file(tmp_path_factory, length, rest):
    path = tmp_path_factory.mktemp("s") / "model.safetensors"
    path.write_bytes(struct.pack("<Q", length) + rest)
    try:
        read_header(path)
    except HeaderError as err:
        assert str(err).startswith(str(path))
