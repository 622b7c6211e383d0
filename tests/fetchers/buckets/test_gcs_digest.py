"""gs:// digests: each file is digested once, as it is written (the library's own MD5 check, a second pass
over every byte, is off), and a resumed transfer is still checked."""

from __future__ import annotations

from pathlib import Path

import pytest

import nim_specdec.fetchers.integrity.verify as verify
from nim_specdec.config.sources import parse_source
from nim_specdec.fetchers.registry import get_fetcher
from servers.fault_proxy import Fault
from servers.fixtures import cache, server, source, store  # noqa: F401 - pytest fixtures
from servers.harness import WEIGHTS, context_for, tree_bytes


def _fetch(server, cache, uri: str, **extra) -> Path:
    ref = parse_source(uri, "NIM_DRAFT_MODEL_PATH")
    return get_fetcher(ref.scheme).fetch(ref, context_for({**server.env(), **extra}, cache, log=lambda _m: None))


@pytest.fixture
def hashers(monkeypatch) -> list:
    """Every Hasher a download makes, with the digests it gave and the algorithm each file was followed by."""
    made: list = []
    real_init, real_results = verify.Hasher.__init__, verify.Hasher.results

    def init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        self.seen, self.followed = {}, {}
        made.append(self)

    def results(self, files):
        found = real_results(self, files)
        self.seen.update(found)
        return found

    real_follow = verify.Hasher.follow

    def follow(self, files, partials):
        self.followed.update({f.name: f.digest[0] for f in files if f.digest is not None})
        return real_follow(self, files, partials)

    monkeypatch.setattr(verify.Hasher, "__init__", init)
    monkeypatch.setattr(verify.Hasher, "results", results)
    monkeypatch.setattr(verify.Hasher, "follow", follow)
    return made


@pytest.mark.parametrize("store", ["gs"], indirect=True)
def test_each_gs_file_is_followed_and_checked_by_its_crc32c(server, source, cache, hashers):
    """Every file is handed to the follower (tests/fetchers/integrity/test_write_follower.py shows it digested while
    written; a file of a few KiB may be whole before the follower's first look, and is then read once)."""
    entry = _fetch(server, cache, source.uri)
    assert tree_bytes(entry) == source.files
    (hasher,) = [h for h in hashers if h.followed]
    assert set(hasher.seen) == set(source.files) == set(hasher.followed)
    # By the CRC32C GCS keeps for every object, not by the MD5 beside it (a thirtieth of the cost here).
    assert set(hasher.followed.values()) == {"crc32c"}


@pytest.mark.parametrize("store", ["gs"], indirect=True)
def test_a_resumed_transfer_is_still_checked(server, cache, hashers):
    """The connection drops mid-file; the library resumes where it stopped, and the whole file is checked."""
    files = {"config.json": b"{}", WEIGHTS: bytes(range(256)) * 512}
    uri = server.publish("resumed", files)
    server.proxy.inject(Fault("drop", WEIGHTS, times=1))
    assert tree_bytes(_fetch(server, cache, uri, NIM_DOWNLOAD_RETRIES="0")) == files
    gets = [r for r in server.proxy.state.records if r.method == "GET" and WEIGHTS in r.path and "alt=media" in r.path]
    assert len(gets) == 2, gets  # the dropped one and the one that resumed
    (hasher,) = [h for h in hashers if h.followed]
    assert hasher.seen[WEIGHTS] == _crc32c(files[WEIGHTS])


def _crc32c(data: bytes) -> str:
    import base64

    import google_crc32c

    return base64.b64encode(google_crc32c.value(data).to_bytes(4, "big")).decode()
