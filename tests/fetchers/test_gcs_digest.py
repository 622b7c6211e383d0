"""gs:// digests: each file is hashed once, as soon as its last byte lands (the library's own MD5 check,
a second pass over every byte, is off), and a resumed transfer is still checked."""

from __future__ import annotations

from pathlib import Path

import pytest
from servers.fault_proxy import Fault
from servers.fixtures import cache, server, source, store  # noqa: F401 - pytest fixtures
from servers.harness import WEIGHTS, context_for, tree_bytes

import nim_specdec.fetchers.verify as verify
from nim_specdec.config.sources import parse_source
from nim_specdec.fetchers.registry import get_fetcher


def _fetch(server, cache, uri: str, **extra) -> Path:
    ref = parse_source(uri, "NIM_DRAFT_MODEL_PATH")
    return get_fetcher(ref.scheme).fetch(ref, context_for({**server.env(), **extra}, cache, log=lambda _m: None))


@pytest.fixture
def hashed(monkeypatch) -> list:
    """The files hashed from disk, with the size each had when its hashing started."""
    calls: list = []
    real = verify.file_digest
    monkeypatch.setattr(
        verify,
        "file_digest",
        lambda path, algorithm: (
            calls.append((Path(path), Path(path).stat().st_size, algorithm)) or real(path, algorithm)
        ),
    )
    return calls


@pytest.mark.parametrize("store", ["gs"], indirect=True)
def test_each_gs_file_is_hashed_once_and_only_once_it_is_whole(server, source, cache, hashed):
    entry = _fetch(server, cache, source.uri)
    assert tree_bytes(entry) == source.files
    got = sorted((str(path).split("/files/", 1)[-1], size) for path, size, _ in hashed)
    assert got == sorted((name, len(data)) for name, data in source.files.items())
    # By the CRC32C GCS keeps for every object, not by the MD5 beside it (a thirtieth of the cost here).
    assert {algorithm for _, _, algorithm in hashed} == {"crc32c"}


@pytest.mark.parametrize("store", ["gs"], indirect=True)
def test_a_resumed_transfer_is_still_checked(server, cache, hashed):
    """The connection drops mid-file; the library resumes where it stopped, and the whole file is hashed."""
    files = {"config.json": b"{}", WEIGHTS: bytes(range(256)) * 512}
    uri = server.publish("resumed", files)
    server.proxy.inject(Fault("drop", WEIGHTS, times=1))
    assert tree_bytes(_fetch(server, cache, uri, NIM_DOWNLOAD_RETRIES="0")) == files
    gets = [r for r in server.proxy.state.records if r.method == "GET" and WEIGHTS in r.path and "alt=media" in r.path]
    assert len(gets) == 2, gets  # the dropped one and the one that resumed
    assert (WEIGHTS, len(files[WEIGHTS])) in [(path.name, size) for path, size, _ in hashed]
