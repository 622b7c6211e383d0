"""Digests made while the client writes: every verifying scheme's client followed under its own temporary names,
the settled prefix only (never past a hole), the digest bound to the inode that is served, and a digest that
raced a write read again from the disk before anything is refused."""

from __future__ import annotations

import hashlib
import os
import time
import uuid
from pathlib import Path

import pytest

import nim_specdec.fetchers.integrity.verify as verify
from nim_specdec.config.sources import parse_source
from nim_specdec.fetchers.hub.hf import hf_partials
from nim_specdec.fetchers.integrity import write_follower
from nim_specdec.fetchers.integrity.verify import Hasher, RemoteFile
from nim_specdec.fetchers.integrity.write_follower import MARGIN, s3transfer_partials, s5cmd_partials
from nim_specdec.fetchers.registry import get_fetcher
from servers.fault_proxy import Fault
from servers.fixtures import cache, server, store  # noqa: F401 - pytest fixtures
from servers.harness import WEIGHTS, context_for, model_files, tree_bytes

PART = 4 * MARGIN
WAIT_S = 60.0  # a bound on each wait for the follower: generous for a loaded machine, never reached when it works


def _until(condition, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"the follower never {what}"
        time.sleep(0.005)


def _listed(name: str, data: bytes) -> RemoteFile:
    return RemoteFile(name, len(data), md5=hashlib.md5(data).hexdigest())


def test_parts_written_out_of_order_are_digested_up_to_the_first_hole_and_finished_at_the_rename(tmp_path):
    data = os.urandom(3 * PART)
    f = _listed("sub/model.safetensors", data)
    (tmp_path / "sub").mkdir()
    partial = tmp_path / "sub" / "model.safetensors.0aF93bC1"  # s3transfer's temporary name
    with Hasher(tmp_path, True) as hasher:
        hasher.follow([f], s3transfer_partials)
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT, 0o600)
        os.pwrite(fd, data[2 * PART :], 2 * PART)  # the last part first: a hole before it
        os.pwrite(fd, data[:PART], 0)
        _until(lambda: hasher.streamed >= PART - MARGIN, "read the first part")
        assert hasher.streamed <= PART  # stopped at the hole, not read as zeros
        assert hasher.found_partial == {f.name}
        os.pwrite(fd, data[PART : 2 * PART], PART)
        os.close(fd)
        os.rename(partial, tmp_path / f.name)
        assert hasher.results([f]) == {f.name: f.md5}
        assert hasher.from_disk == []


def test_another_inode_at_the_final_name_is_hashed_from_the_disk(tmp_path):
    data = os.urandom(PART)
    f = _listed("model.bin", data)
    with Hasher(tmp_path, True) as hasher:
        hasher.follow([f], s5cmd_partials)
        (tmp_path / "model.bin123").write_bytes(b"x" * PART)  # a partial that the client then abandons
        _until(lambda: hasher.found_partial, "found the partial")
        (tmp_path / "model.bin").write_bytes(data)
        assert hasher.results([f]) == {f.name: f.md5}
        assert hasher.from_disk == [f.name]


def test_a_digest_that_raced_a_rewrite_is_confirmed_from_the_disk_before_a_refusal(tmp_path):
    """The follower read bytes that the client later wrote again: the followed digest is wrong, the file is not."""
    data = os.urandom(PART)
    f = _listed("model.bin", data)
    with Hasher(tmp_path, True) as hasher:
        hasher.follow([f], write_follower.in_place)
        path = tmp_path / "model.bin"
        path.write_bytes(b"\0" * PART)
        _until(lambda: hasher.streamed >= PART, "read the first write")
        fd = os.open(path, os.O_WRONLY)
        os.pwrite(fd, data, 0)
        os.close(fd)
        verify.verify("s3://b/p", tmp_path, [f], hasher)  # no refusal
        assert hasher.from_disk == [f.name]
        path.write_bytes(b"\1" * PART)
        with pytest.raises(verify.MaterializeError, match="checksum differs"):
            verify.verify("s3://b/p", tmp_path, [f], hasher)  # a file that is wrong on disk still is refused


def test_the_partial_names_are_the_clients_own(tmp_path):
    from huggingface_hub._local_folder import get_local_download_paths
    from s3transfer.utils import random_file_extension

    name = "sub/model-00001-of-00002.safetensors"
    ((folder, pattern),) = s3transfer_partials(tmp_path, name)
    assert folder == tmp_path / "sub" and pattern.fullmatch(
        f"model-00001-of-00002.safetensors.{random_file_extension()}"
    )
    assert not pattern.fullmatch("model-00001-of-00002.safetensors.index.json")
    ((folder, pattern),) = hf_partials(tmp_path, name)
    incomplete = get_local_download_paths(tmp_path, name).incomplete_path("5d41402abc4b2a76b9719d911017c592")
    assert folder == incomplete.parent and pattern.fullmatch(incomplete.name)
    ((folder, pattern),) = s5cmd_partials(tmp_path, name)  # Go's os.CreateTemp(folder, name + "*")
    assert pattern.fullmatch("model-00001-of-00002.safetensors3266617103")


@pytest.fixture
def hashers(monkeypatch) -> list:
    made: list = []
    real_init = verify.Hasher.__init__

    def init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(verify.Hasher, "__init__", init)
    return made


@pytest.mark.parametrize("store", ["s3", "s3-boto3", "gs", "hf"], indirect=True)
def test_every_verifying_scheme_digests_its_files_as_the_client_writes_them(server, cache, hashers):
    """The weights trickle in (1 MiB at 256 KiB/s): the follower finds them under the client's temporary name,
    and they are not read back from the disk once whole."""
    files = {**model_files(1024 * 1024)}
    uri = server.publish(f"follow{uuid.uuid4().hex[:8]}", files)
    server.proxy.inject(Fault("slow", WEIGHTS, times=-1, bytes_per_second=256 * 1024))
    ref = parse_source(uri, "NIM_DRAFT_MODEL_PATH")
    entry = get_fetcher(ref.scheme).fetch(ref, context_for(server.env(), cache, log=lambda _m: None))
    assert tree_bytes(entry) == files
    (hasher,) = [h for h in hashers if h.streamed or h.found_partial]
    if server.scheme == "gs":  # our writer appends under the final name: bytes were digested before it was whole
        assert hasher.streamed > 0
    else:  # huggingface_hub buffers 10 MB before it writes: its partial file is found, its bytes read at the rename
        assert WEIGHTS in hasher.found_partial
    assert WEIGHTS not in hasher.from_disk  # (a file of a few bytes may be whole before the follower's first look)
    assert Path(entry, WEIGHTS).stat().st_size == len(files[WEIGHTS])
