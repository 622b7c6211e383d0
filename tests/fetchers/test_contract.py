"""The contract every remote fetcher passes, each against its real server on loopback.

The fault proxy between fetcher and server injects the failures (5xx, dropped connection, stall);
the `store` fixture runs every test once per scheme.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import time
from pathlib import Path

import pytest

from nim_specdec.config.sources import parse_source
from nim_specdec.errors import EXIT_MATERIALIZE, MaterializeError
from nim_specdec.fetchers.download.base import FetchContext
from nim_specdec.fetchers.registry import get_fetcher
from nim_specdec.fetchers.volume.cache import CacheLayout, entry_name
from servers.fault_proxy import Fault
from servers.fixtures import cache, server, source, store  # noqa: F401 - pytest fixtures
from servers.harness import WEIGHTS, cli_env, context_for, start_cli, tree_bytes


def context(server, cache: Path, logs: list | None = None, **extra) -> FetchContext:
    sink = logs if logs is not None else []
    return context_for({**server.env(), **extra}, cache, log=sink.append)


def fetch(server, cache: Path, uri: str, **extra) -> Path:
    ref = parse_source(uri, "NIM_DRAFT_MODEL_PATH")
    return get_fetcher(ref.scheme).fetch(ref, context(server, cache, **extra))


def leftovers(cache: Path) -> list[str]:
    tmp = CacheLayout.under(cache).tmp_dir()
    return sorted(p.name for p in tmp.iterdir()) if tmp.is_dir() else []


def test_download_then_cache_hit_without_network(server, source, cache, monkeypatch):
    ref = parse_source(source.uri, "NIM_DRAFT_MODEL_PATH")
    fetcher = get_fetcher(ref.scheme)
    ctx = context(server, cache)
    assert fetcher.cached(ref, ctx) is None
    path = fetcher.fetch(ref, ctx)
    assert tree_bytes(path) == source.files
    assert leftovers(cache) == []
    # With network, a second start downloads nothing; an hf:// source named by a branch (here main) asks
    # once which commit the branch is now, and nothing else, once the first start's answer is older than
    # NIM_HF_BRANCH_FOLLOW_S (within it, the answer is followed: nothing is asked).
    for follow_s, expected in (("1800", []), ("0", [("GET", f"/api/models/{ref.location}/revision/main")])):
        before = len(server.proxy.state.records)
        assert fetcher.fetch(ref, context(server, cache, NIM_HF_BRANCH_FOLLOW_S=follow_s)) == path
        asked = [(r.method, r.path.split("?")[0]) for r in server.proxy.state.records[before:]]
        assert asked == (expected if ref.scheme == "hf" else []), asked

    def refuse(*args, **kwargs):
        raise OSError("network access attempted on a cache hit")

    import socket

    for name in ("connect", "connect_ex"):
        monkeypatch.setattr(socket.socket, name, refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    requests_before = len(server.proxy.state.records)
    assert fetcher.cached(ref, ctx) == path
    if ref.scheme != "hf":
        assert fetcher.fetch(ref, ctx) == path
    assert get_fetcher(ref.scheme).fetch(ref, context_for({}, cache, offline=True)) == path
    assert len(server.proxy.state.records) == requests_before


def test_entries_are_owner_only(server, source, cache):
    path = fetch(server, cache, source.uri)
    entry = path.parent
    for p in [entry, *entry.rglob("*")]:
        assert stat.S_IMODE(p.lstat().st_mode) & 0o077 == 0, p
    assert stat.S_IMODE(CacheLayout.under(cache).root.stat().st_mode) & 0o077 == 0


def test_entry_without_marker_is_never_used(server, source, cache):
    path = fetch(server, cache, source.uri)
    (path.parent / "complete.json").unlink()
    (path / WEIGHTS).write_bytes(b"truncated")
    ref = parse_source(source.uri, "X")
    assert get_fetcher(ref.scheme).cached(ref, context(server, cache)) is None
    again = fetch(server, cache, source.uri)
    assert tree_bytes(again) == source.files


def test_offline_without_entry_names_uri_and_fix(server, source, cache):
    ref = parse_source(source.uri, "X")
    with pytest.raises(MaterializeError) as err:
        get_fetcher(ref.scheme).fetch(ref, context_for(server.env(), cache, offline=True))
    assert err.value.exit_code == EXIT_MATERIALIZE
    assert ref.location in str(err.value) and "nim-specdec download" in str(err.value)
    assert server.proxy.state.records == []


def test_failed_download_leaves_nothing(server, source, cache):
    server.proxy.inject(Fault("status", WEIGHTS, times=-1, status=500))
    with pytest.raises(MaterializeError):
        fetch(server, cache, source.uri, NIM_DOWNLOAD_RETRIES="0", NIM_DOWNLOAD_TIMEOUT="2")
    layout = CacheLayout.under(cache)
    name = entry_name(parse_source(source.uri, "X"))
    assert not layout.entry(name).exists()
    assert leftovers(cache) == []


def test_five_hundred_then_success(server, source, cache):
    server.proxy.inject(Fault("status", WEIGHTS, times=1, status=503))
    path = fetch(server, cache, source.uri)
    assert tree_bytes(path) == source.files
    assert len(server.proxy.requests("GET", WEIGHTS)) >= 2


def test_connection_dropped_mid_file(server, source, cache):
    server.proxy.inject(Fault("drop", WEIGHTS, times=1))
    path = fetch(server, cache, source.uri)
    assert tree_bytes(path) == source.files
    assert len(server.proxy.requests("GET", WEIGHTS)) >= 2


def test_stalled_server_ends_in_error(server, source, cache):
    server.proxy.inject(Fault("stall", WEIGHTS, times=-1))
    started = time.monotonic()
    with pytest.raises(MaterializeError) as err:
        fetch(server, cache, source.uri, NIM_DOWNLOAD_TIMEOUT="1", NIM_DOWNLOAD_RETRIES="0")
    # A generous bound: what is checked is "ends", not how fast.
    assert time.monotonic() - started < 120
    # Ended by the read timeout, or by the minimum rate when the other files' bytes arrived meanwhile.
    assert "download failed" in str(err.value) or "NIM_DOWNLOAD_MIN_RATE_KB" in str(err.value)
    assert leftovers(cache) == []


def test_path_traversal_refused(server, cache, tmp_path):
    files = {"config.json": b"{}", "evil-escape.txt": b"owned"}
    uri = server.publish(f"trav{os.getpid()}{time.monotonic_ns() % 10**6}", files)
    # The store answers with a name that climbs out of the download directory.
    server.proxy.inject(Fault("rewrite", "", times=-1, replace=(b"evil-escape.txt", b"../../escape.txt")))
    with pytest.raises(MaterializeError) as err:
        fetch(server, cache, uri)
    assert "refusing" in str(err.value)
    assert not any(p.name == "escape.txt" for p in tmp_path.rglob("*"))
    assert not (CacheLayout.under(cache).root / "entries").exists() or not any(
        (CacheLayout.under(cache).root / "entries").iterdir()
    )


def test_missing_object_exits_3_with_one_line(server, cache):
    prefix = f"absent{time.monotonic_ns() % 10**8}"
    uri = server.publish(prefix, {"x": b"1"}).replace(prefix, prefix + "-missing")
    proc = start_cli(["download", uri], cli_env(server, cache))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == EXIT_MATERIALIZE, err
    lines = [line for line in err.splitlines() if line.startswith("nim-specdec: error:")]
    assert len(lines) == 1 and parse_source(uri, "x").location in lines[0]
    assert "Traceback" not in err and out == ""


def test_secrets_never_in_output_or_marker(server, source, cache):
    secrets = [v for k, v in server.env().items() if any(s in k for s in ("KEY", "TOKEN", "SECRET", "PASSWORD"))]
    assert secrets, "each store is configured with a credential"
    env = cli_env(server, cache, NIM_JSONL_LOGGING="1", NIM_PROGRESS_INTERVAL="0.1")
    server.proxy.inject(Fault("slow", WEIGHTS, times=1, bytes_per_second=400_000))
    ok = start_cli(["download", source.uri], env)
    ok_out, ok_err = ok.communicate(timeout=120)
    assert ok.returncode == 0, ok_err
    records = [json.loads(line) for line in ok_err.splitlines()]  # every stderr line is a JSON object
    progress = [r["message"] for r in records if "%)" in r["message"] and "ETA" in r["message"]]
    assert progress and all("/s" in p for p in progress)
    bad = start_cli(["download", source.uri + "-missing"], env)
    bad_out, bad_err = bad.communicate(timeout=120)
    marker = next(CacheLayout.under(cache).root.rglob("complete.json")).read_text()
    for text in (ok_out, ok_err, bad_out, bad_err, marker):
        for secret in secrets:
            assert secret not in text


def test_four_launchers_download_once(server, source, cache):
    server.proxy.inject(Fault("slow", WEIGHTS, times=-1, bytes_per_second=200_000))
    env = cli_env(server, cache)
    procs = [start_cli(["download", source.uri], env) for _ in range(4)]
    results = [p.communicate(timeout=180) for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, [e for _, e in results]
    paths = {out.strip() for out, _ in results}
    assert len(paths) == 1
    assert tree_bytes(Path(paths.pop())) == source.files
    assert len(server.proxy.requests("GET", WEIGHTS)) == 1
    assert any("waiting for another launcher" in err for _, err in results)


def test_kill_9_mid_download_then_restart(server, source, cache):
    server.proxy.inject(Fault("slow", WEIGHTS, times=1, bytes_per_second=50_000))
    proc = start_cli(["download", source.uri], cli_env(server, cache))
    deadline = time.monotonic() + 60
    while not server.proxy.requests("GET", WEIGHTS) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # some bytes of the weights are on disk now
    assert proc.poll() is None, "the download finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    ref = parse_source(source.uri, "X")
    assert get_fetcher(ref.scheme).cached(ref, context(server, cache)) is None
    assert not list(cache.rglob("complete.json"))
    assert leftovers(cache) != []  # the killed download's directory, never mistaken for an entry
    assert list(cache.rglob("*.lock")), "the killed launcher's lock file is still there"
    path = fetch(server, cache, source.uri)
    assert tree_bytes(path) == source.files
    assert leftovers(cache) == []


def _refuses_corruption(server, cache, replacement: bytes) -> None:
    files = {"config.json": b"{}", WEIGHTS: b"x" * 4096 + b"ORIGINAL" + b"y" * 4096}
    uri = server.publish(f"corrupt{time.monotonic_ns() % 10**9}", files)
    server.proxy.inject(Fault("rewrite", WEIGHTS, times=-1, replace=(b"ORIGINAL", replacement)))
    with pytest.raises(MaterializeError) as err:
        fetch(server, cache, uri, NIM_DOWNLOAD_RETRIES="0", NIM_DOWNLOAD_TIMEOUT="5")
    assert err.value.exit_code == EXIT_MATERIALIZE
    assert not list(cache.rglob("complete.json")) and leftovers(cache) == []


def test_resized_bytes_never_become_an_entry(server, cache):
    """Bytes changed on the way are refused: by the store's digest, the listed size, or the SDK's own check."""
    _refuses_corruption(server, cache, b"TAMPERED-AND-LONGER")


# The stores whose listings carry a digest (NGC's list sizes only: nothing can catch a same-size change there).
@pytest.mark.parametrize("store", ["gs", "hf", "s3"], indirect=True)
def test_same_size_tampering_is_caught_by_the_digest(server, cache):
    assert server.gives_digests
    _refuses_corruption(server, cache, b"TAMPERED")


def test_fetch_only_reads_the_named_files_and_caches_nothing(server, source, cache, tmp_path):
    """What the vLLM check reads before the weights: config.json alone, in a scratch directory."""
    ref = parse_source(source.uri, "NIM_MODEL_PATH")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    got = get_fetcher(ref.scheme).fetch_only(ref, context(server, cache), frozenset({"config.json"}), scratch)
    assert tree_bytes(got) == {"config.json": source.files["config.json"]}
    assert scratch in got.parents
    assert server.proxy.requests("GET", WEIGHTS) == []
    assert get_fetcher(ref.scheme).cached(ref, context(server, cache)) is None and leftovers(cache) == []
