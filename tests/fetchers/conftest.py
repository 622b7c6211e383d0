"""Fixtures for the fetcher contract: one real loopback server per scheme, behind a fault proxy."""

from __future__ import annotations

import importlib
import socket
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))  # makes tests/servers importable as `servers`

from servers.harness import model_files  # noqa: E402

# scheme -> the store class that starts its server
STORES = {
    "s3": "servers.s3_store:S3Store",
    "gs": "servers.gcs_store:GCSStore",
    "hf": "servers.hf_store:HFStore",
    "ngc": "servers.ngc_store:NGCStore",
}


@pytest.fixture(scope="session", params=sorted(STORES))
def store(request):
    module, _, cls = STORES[request.param].partition(":")
    started = getattr(importlib.import_module(module), cls)().start()
    yield started
    started.close()


@dataclass
class Source:
    uri: str
    files: dict[str, bytes]


@pytest.fixture
def server(store):
    store.proxy.reset()
    yield store
    store.proxy.reset()


@pytest.fixture
def source(server) -> Source:
    files = model_files()
    return Source(server.publish(f"m{uuid.uuid4().hex[:10]}", files), files)


@pytest.fixture
def cache(tmp_path) -> Path:
    path = tmp_path / "cache"
    path.mkdir()
    return path


@pytest.fixture
def no_network(monkeypatch):
    """Any outgoing connection attempt fails: proves a code path makes none."""

    def refuse(*args, **kwargs):
        raise OSError("network access attempted while the test forbids it")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
