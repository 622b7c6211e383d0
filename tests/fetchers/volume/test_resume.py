"""A download killed half-way (SIGKILL, as a pod is killed) resumes from the verified files on the volume:
the second start fetches at most ~55 % of the bytes, counted by the fault proxy in front of the store, on
moto (s5cmd and boto3) and on olah (huggingface_hub). What was left is verified before it is trusted: a
file altered at rest is fetched again, and a file the launcher did not write is never taken over."""

from __future__ import annotations

import hashlib
import os
import uuid

import pytest

from nim_specdec.fetchers.volume.cache import CacheLayout
from servers.fault_proxy import FaultProxy
from servers.harness import SRC, cli_env, tree_bytes
from servers.interrupted import (
    SHARD_PREFIX,
    cached_folder,
    kill_at_half,
    kill_at_half_then_resume,
    shard_files,
    start_again,
)
from servers.olah_hub import OlahHub
from servers.s3_store import S3Store

BOUND = 0.55  # of the weights' bytes, for a start after a kill at half
RATE = 128 * 1024  # bytes a second per connection while the first start runs: about 10 s in all
OTHER_UID = 54321


@pytest.fixture(scope="module")
def s3():
    store = S3Store().start()
    yield store
    store.close()


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    started = OlahHub(tmp_path_factory.mktemp("olah")).start()
    proxy = FaultProxy(started.url).start()
    yield started, proxy
    proxy.close()
    started.stop()


def weights_bytes(files: dict[str, bytes]) -> int:
    return sum(len(data) for name, data in files.items() if name.startswith(SHARD_PREFIX))


def leftovers(cache) -> list:
    tmp = CacheLayout.under(cache).tmp_dir()
    return list(tmp.iterdir()) if tmp.is_dir() else []


@pytest.mark.parametrize("client", ["1", "0"], ids=["s5cmd", "boto3"])
def test_a_killed_s3_download_resumes_from_the_verified_files(s3, tmp_path, client):
    files = shard_files()
    total = weights_bytes(files)
    uri = s3.publish(f"resume{uuid.uuid4().hex[:8]}", files)
    env = cli_env(s3, tmp_path / "cache", NIM_S5CMD=client, NIM_DOWNLOAD_CONCURRENCY="2")
    figures, out = kill_at_half_then_resume(s3.proxy, env, uri, total, RATE)
    assert total // 2 <= figures.first < total, figures
    assert 0 < figures.second <= BOUND * total, figures
    assert "resuming:" in out and "verified" in out, out
    assert tree_bytes(cached_folder(out)) == files
    assert leftovers(tmp_path / "cache") == []


def test_a_killed_hf_download_resumes_from_the_verified_files(hub, tmp_path):
    olah, proxy = hub
    repo = olah.repo(f"org/r{uuid.uuid4().hex[:10]}")
    files = shard_files()
    repo.commit(files)
    total = weights_bytes(files)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "NIM_", "HUGGING", "AWS_"))}
    env.update(
        HF_ENDPOINT=proxy.url,
        NIM_CACHE_PATH=str(tmp_path / "cache"),
        PYTHONPATH=str(SRC),
        NIM_DOWNLOAD_CONCURRENCY="2",
    )
    figures, out = kill_at_half_then_resume(proxy, env, f"hf://{repo.name}", total, RATE)
    assert total // 2 <= figures.first < total, figures
    assert 0 < figures.second <= BOUND * total, figures
    assert "resuming:" in out, out
    assert tree_bytes(cached_folder(out)) == files
    assert leftovers(tmp_path / "cache") == []


def test_a_leftover_altered_at_rest_or_not_ours_is_fetched_again(s3, tmp_path):
    """Same size, one byte flipped: the digest catches it. Owned by another UID: never taken over."""
    files = shard_files()
    total = weights_bytes(files)
    uri = s3.publish(f"tamper{uuid.uuid4().hex[:8]}", files)
    cache = tmp_path / "cache"
    env = cli_env(s3, cache, NIM_S5CMD="0", NIM_DOWNLOAD_CONCURRENCY="2")
    # A first run killed at half, then the leftover altered before the next start.
    first = kill_at_half(s3.proxy, env, uri, total, RATE)
    (left,) = leftovers(cache)
    complete = sorted(
        p
        for p in (left / "files").iterdir()
        if p.name.startswith(SHARD_PREFIX) and p.name in files and p.stat().st_size == len(files[p.name])
    )
    assert len(complete) >= 2, first
    flipped, foreign = complete[0], complete[1]
    data = bytearray(flipped.read_bytes())
    data[100] ^= 0x01
    flipped.write_bytes(bytes(data))
    if os.geteuid() == 0:
        os.chown(foreign, OTHER_UID, OTHER_UID)
    second, _took, out = start_again(s3.proxy, env, uri)
    assert tree_bytes(cached_folder(out)) == files
    refetched = {r.path.rsplit("/", 1)[-1] for r in s3.proxy.requests("GET", SHARD_PREFIX)}
    assert flipped.name in refetched, sorted(refetched)
    if os.geteuid() == 0:
        assert foreign.name in refetched, sorted(refetched)
    assert second < total  # the other complete files were taken over


def test_an_object_replaced_since_the_kill_is_fetched_anew_even_with_size_checks(s3, tmp_path):
    """NIM_DOWNLOAD_VERIFY=size: the store's digest still decides what is taken over, so a shard republished
    with other bytes of the same size between the kill and the next start is fetched, the others are not."""
    files = shard_files()
    total = weights_bytes(files)
    prefix = f"replaced{uuid.uuid4().hex[:8]}"
    uri = s3.publish(prefix, files)
    cache = tmp_path / "cache"
    env = cli_env(s3, cache, NIM_S5CMD="0", NIM_DOWNLOAD_CONCURRENCY="2", NIM_DOWNLOAD_VERIFY="size")
    kill_at_half(s3.proxy, env, uri, total, RATE)
    (left,) = leftovers(cache)
    # Final names only: the kill may have left a client's temporary file beside them (s3transfer's NAME.1a2B3c4D).
    done = sorted(
        p.name
        for p in (left / "files").iterdir()
        if p.name.startswith(SHARD_PREFIX) and p.name in files and p.stat().st_size == len(files[p.name])
    )
    assert done, "no shard was complete at the kill"
    replaced = done[0]
    files[replaced] = os.urandom(len(files[replaced]))
    s3.publish(prefix, {replaced: files[replaced]})
    second, _took, out = start_again(s3.proxy, env, uri)
    assert tree_bytes(cached_folder(out)) == files
    refetched = {r.path.rsplit("/", 1)[-1] for r in s3.proxy.requests("GET", SHARD_PREFIX)}
    assert replaced in refetched and not (set(done[1:]) & refetched), sorted(refetched)
    assert second <= BOUND * total


def test_the_clients_temporary_files_left_by_a_kill_are_never_taken_over_nor_trip_the_resume(tmp_path):
    """What a SIGKILL leaves beside the shards: s3transfer's and s5cmd's temporary files (whole-sized, even), and
    huggingface_hub's .incomplete files; and a name that is a file in one leftover and a folder in another."""
    from s3transfer.utils import random_file_extension

    from nim_specdec.fetchers.integrity.verify import Hasher, RemoteFile
    from nim_specdec.fetchers.volume import resume

    data = {"model-1.safetensors": os.urandom(4096), "model-2.safetensors": os.urandom(4096)}
    listed = [RemoteFile(n, len(b), md5=hashlib.md5(b).hexdigest()) for n, b in data.items()]
    tmp_dir = tmp_path / "tmp"
    old, older = tmp_dir / "entry.aaa" / "files", tmp_dir / "entry.bbb" / "files"
    (old / ".cache" / "huggingface" / "download").mkdir(parents=True)
    older.mkdir(parents=True)
    (old / "model-1.safetensors").write_bytes(data["model-1.safetensors"])  # whole, renamed: taken over
    (old / f"model-2.safetensors.{random_file_extension()}").write_bytes(data["model-2.safetensors"])
    (old / "model-2.safetensors3266617103").write_bytes(data["model-2.safetensors"])
    (old / ".cache" / "huggingface" / "download" / "abc.etag.incomplete").write_bytes(b"x")
    (old / "sub").write_bytes(b"a file here")
    (older / "sub").mkdir()
    (older / "sub" / "x").write_bytes(b"a folder there")
    current = tmp_dir / "entry.ccc"
    dest = current / "files"
    dest.mkdir(parents=True)
    resume.adopt_leftovers(tmp_dir, "entry.", dest, current)
    assert sorted(p.name for p in tmp_dir.iterdir()) == ["entry.ccc"]  # every leftover removed
    present = resume.sized_matches(dest, listed)
    with Hasher(dest, enabled=False) as hasher:
        kept = resume.digest_checked(dest, present, hasher)
    assert kept == {"model-1.safetensors"}
    assert sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file()) == ["model-1.safetensors"]
