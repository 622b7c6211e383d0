"""The disk pre-flight: the pure decision table-driven, then a real cache volume too small for the download
(a tmpfs of a few MiB in a mount namespace of its own) refused before the store sent one byte of a file."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
import uuid

import pytest

from nim_specdec.errors import EXIT_MATERIALIZE, MaterializeError
from nim_specdec.fetchers.integrity.verify import RemoteFile
from nim_specdec.fetchers.transfer.progress import human_bytes
from nim_specdec.fetchers.volume.disk_space import MARGIN_FIXED, margin_for, space_verdict
from nim_specdec.fetchers.volume.resume import discard_reason, glob_escape
from servers.harness import cli_env
from servers.s3_store import S3Store

MiB = 1024 * 1024
GiB = 1024 * MiB


@pytest.mark.parametrize(
    "need,free,fits",
    [
        (0, 0, True),  # nothing left to fetch (all resumed): never refused
        (10 * MiB, 10 * MiB + MARGIN_FIXED, False),  # the 1 % share of the margin is missing
        (10 * MiB, 10 * MiB + margin_for(10 * MiB), True),  # exactly enough
        (10 * MiB, 10 * MiB + margin_for(10 * MiB) - 1, False),
        (1000 * GiB, 500 * GiB, False),  # the multi-node example: ~1 TB of weights on a 500Gi claim
        (140 * GiB, 500 * GiB, True),
        (-5, 0, True),  # a negative need (a listing that lies) counts as nothing
        (1, -1, False),
    ],
)
def test_the_space_verdict(need, free, fits):
    verdict = space_verdict(need, free)
    assert verdict.fits is fits
    assert verdict.required == verdict.need + verdict.margin


def test_the_margin_is_fixed_plus_a_share():
    assert margin_for(0) == MARGIN_FIXED
    assert margin_for(1000 * GiB) == MARGIN_FIXED + 10 * GiB


LISTED = RemoteFile("model-00001.safetensors", 100)


@pytest.mark.parametrize(
    "listed,mode,size,reason",
    [
        (LISTED, stat.S_IFREG | 0o600, 100, None),
        (LISTED, stat.S_IFREG | 0o600, 99, "size 99, the store's 100"),  # cut short
        (LISTED, stat.S_IFREG | 0o600, 101, "size 101, the store's 100"),
        (LISTED, stat.S_IFLNK | 0o777, 100, "not a regular file"),
        (None, stat.S_IFREG | 0o600, 100, "not in the listing"),  # a client's temporary name
    ],
)
def test_what_a_leftover_file_must_be_to_stand_for_the_listed_one(listed, mode, size, reason):
    assert discard_reason(listed, mode, size) == reason


@pytest.mark.parametrize("name", ["model[1].bin", "a*b?.json", "plain/name.safetensors", "[]"])
def test_a_name_as_a_pattern_matches_only_itself(name):
    import fnmatch

    pattern = glob_escape(name)
    assert fnmatch.fnmatchcase(name, pattern)
    assert not fnmatch.fnmatchcase(name + "x", pattern)


@pytest.mark.parametrize(
    "n,text", [(512, "512 B"), (3 * MiB, "3.0 MiB"), (2 * GiB, "2.0 GiB"), (3 * 1024 * GiB, "3.0 TiB")]
)
def test_sizes_in_human_units(n, text):
    assert human_bytes(n) == text


@pytest.fixture(scope="module")
def s3():
    store = S3Store().start()
    yield store
    store.close()


CAN_MOUNT = os.geteuid() == 0 and shutil.which("unshare") is not None


@pytest.mark.skipif(not CAN_MOUNT, reason="needs root for a mount namespace with a small tmpfs (unshare -m)")
@pytest.mark.parametrize("client", ["1", "0"], ids=["s5cmd", "boto3"])
@pytest.mark.parametrize("volume_mib,refused", [(8, True), (96, False)])
def test_a_volume_too_small_is_refused_before_the_first_byte(s3, tmp_path, client, volume_mib, refused):
    """12 MiB of weights: refused on an 8 MiB volume (both figures in the line, no GET of a file reached the
    store), downloaded on a 96 MiB one (12 MiB and the 64 MiB margin fit)."""
    files = {"config.json": b"{}", **{f"model-{i}.safetensors": os.urandom(4 * MiB) for i in range(3)}}
    uri = s3.publish(f"disk{uuid.uuid4().hex[:8]}", files)
    volume = tmp_path / "volume"
    volume.mkdir()
    env = cli_env(s3, volume / "cache", NIM_S5CMD=client, VOLUME=str(volume), URI=uri, PY=sys.executable)
    script = f'mount -t tmpfs -o size={volume_mib}m tmpfs "$VOLUME" && exec "$PY" -m nim_specdec download "$URI"'
    s3.proxy.reset()
    done = subprocess.run(["unshare", "-m", "sh", "-c", script], env=env, capture_output=True, text=True, timeout=120)
    objects = [r for r in s3.proxy.requests("GET", "/disk") if "list-type" not in r.path]
    assert s3.proxy.requests("GET", "list-type"), "the listing was never asked"
    if not refused:
        assert done.returncode == 0, done.stderr
        assert sum(r.sent for r in objects) == sum(len(v) for v in files.values())
        return
    assert done.returncode == EXIT_MATERIALIZE, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("nim-specdec: error:")]
    assert len(errors) == 1, done.stderr
    line = errors[0]
    assert re.search(r"has 8\.0 MiB free but the download needs 12\.0 MiB more", line), line
    assert "nothing was downloaded" in line and "mount a volume of at least" in line, line
    assert objects == [], [(r.path, r.sent) for r in objects]  # not one byte of a file was sent
    assert "Traceback" not in done.stderr
    print(line)


@pytest.mark.parametrize("size", [-10 * GiB, -1, True, 1.5])
def test_a_listed_size_that_is_not_a_byte_count_is_refused_where_it_is_listed(size):
    """A fifth round's class: the pre-flight clamped the sum, not its terms, so a listing of 10 GiB and
    -10 GiB needed nothing. Every backend's listing becomes RemoteFile values, which take only byte counts."""
    with pytest.raises(MaterializeError) as caught:
        RemoteFile("model-00001-of-00002.safetensors", size)
    assert caught.value.exit_code == 3 and "not a count of bytes" in caught.value.one_line()
