"""The transfers of huggingface_hub, google-cloud-storage and ngcsdk run in a fresh interpreter, never in a fork of
the launcher, and s5cmd is tied to the launcher without a preexec function: by then the launcher has threads (the
Hasher's follower and pool, the progress watch), and a lock one of them held at a fork would be held for ever in
the child. Each still dies with a killed launcher."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from nim_specdec.config.sources import parse_source
from nim_specdec.fetchers.registry import get_fetcher
from servers.fault_proxy import Fault
from servers.harness import WEIGHTS, cli_env, context_for, model_files, tree_bytes


@pytest.mark.parametrize("scheme", ["hf", "gs", "ngc", "s3"])
def test_a_transfer_never_forks_the_launcher_nor_runs_code_between_fork_and_exec(tmp_path, monkeypatch, scheme):
    """No os.fork (the library transfers' child was one), and no preexec function (s5cmd's tie to the launcher
    was one): either runs Python in a copy of a process whose other threads may hold locks."""
    from servers.gcs_store import GCSStore  # noqa: PLC0415
    from servers.hf_store import HFStore  # noqa: PLC0415
    from servers.ngc_store import NGCStore  # noqa: PLC0415
    from servers.s3_store import S3Store  # noqa: PLC0415

    def no_fork(*_args, **_kwargs):
        raise AssertionError("the launcher forked itself for a transfer")

    monkeypatch.setattr(os, "fork", no_fork)
    monkeypatch.setattr(os, "forkpty", no_fork)
    preexec: list = []
    real_popen = subprocess.Popen.__init__

    def popen(self, *args, **kwargs):
        preexec.append(kwargs.get("preexec_fn"))
        real_popen(self, *args, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", popen)
    store = {"hf": HFStore, "gs": GCSStore, "ngc": NGCStore, "s3": S3Store}[scheme]().start()
    try:
        files = model_files(1024 * 1024)
        uri = store.publish(f"spawn{uuid.uuid4().hex[:8]}", files)
        entry = get_fetcher(scheme).fetch(parse_source(uri, "X"), context_for(store.env(), tmp_path))
        assert tree_bytes(entry) == files
        assert store.proxy.requests("GET", WEIGHTS)  # the weights went out to the child
        assert preexec and set(preexec) == {None}  # a child was started, none with a preexec function
    finally:
        store.close()


def _children(pid: int) -> list[tuple[int, list[str]]]:
    """(pid, argv) of the live processes whose parent is `pid`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z" and int(fields[1]) == pid:
            found.append((int(entry), [a.decode(errors="replace") for a in argv if a]))
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("scheme", ["s3", "hf"])
def test_the_transfer_process_dies_with_a_killed_launcher(tmp_path, scheme):
    """SIGKILL leaves no transfer writing into the cache: s5cmd (started through a fresh interpreter that ties it
    to the launcher, no code run between fork and exec) and the library transfer's child both die with it."""
    from servers.hf_store import HFStore  # noqa: PLC0415
    from servers.s3_store import S3Store  # noqa: PLC0415

    store = {"s3": S3Store, "hf": HFStore}[scheme]().start()
    launcher = None
    try:
        files = model_files(1024 * 1024)
        uri = store.publish(f"tied{uuid.uuid4().hex[:8]}", files)
        store.proxy.inject(Fault("slow", WEIGHTS, times=-1, bytes_per_second=4096))  # minutes: killed long before
        env = cli_env(store, tmp_path / "cache", NIM_S5CMD="1")
        launcher = subprocess.Popen(
            [sys.executable, "-m", "nim_specdec", "download", uri], env=env, stderr=subprocess.DEVNULL
        )
        wanted = "s5cmd" if scheme == "s3" else "child_main"
        deadline = time.monotonic() + 120
        while True:
            found = [pid for pid, argv in _children(launcher.pid) if any(wanted in a for a in argv[:5])]
            if found and (scheme != "s3" or _children_exec(found[0])):
                break
            assert launcher.poll() is None and time.monotonic() < deadline, "the transfer never started"
            time.sleep(0.02)
        (child,) = found
        launcher.kill()
        launcher.wait()
        deadline = time.monotonic() + 30
        while _alive(child):
            assert time.monotonic() < deadline, f"the transfer process {child} outlived the launcher"
            time.sleep(0.02)
    finally:
        if launcher is not None and launcher.poll() is None:
            launcher.kill()
        store.close()


def _children_exec(pid: int) -> bool:
    """The process runs s5cmd itself (the tie's interpreter has exec'd it)."""
    try:
        return Path(os.readlink(f"/proc/{pid}/exe")).name == "s5cmd"
    except OSError:
        return False
