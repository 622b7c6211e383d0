"""Table-driven tests of the pure parts: settings, cache names, name checks, redaction, progress figures."""

from __future__ import annotations

import hashlib
import io

import pytest

from nim_specdec.config.download_settings import download_settings
from nim_specdec.config.sources import parse_source
from nim_specdec.errors import ConfigError, MaterializeError
from nim_specdec.fetchers.integrity.verify import CompletionWriter, Hasher, RemoteFile, verify
from nim_specdec.fetchers.transfer.progress import Progress, format_line, progress_fields
from nim_specdec.fetchers.transfer.safety import relative_name
from nim_specdec.fetchers.volume.cache import entry_name, marker_document, normalized_uri
from nim_specdec.text.redact import redact_text as redact
from nim_specdec.text.redact import secret_values


@pytest.mark.parametrize(
    ("value", "normalized"),
    [
        ("hf://org/name", "hf://org/name@main"),
        ("hf://org/name@main", "hf://org/name@main"),
        ("hf://org/name:v2", "hf://org/name@v2"),
        ("s3://bucket/prefix/", "s3://bucket/prefix"),
        ("gs://bucket/a/b", "gs://bucket/a/b"),
        ("ngc://org/team/name:1.0", "ngc://org/team/name@1.0"),
    ],
)
def test_normalized_uri(value, normalized):
    assert normalized_uri(parse_source(value, "X")) == normalized


def test_entry_names_are_readable_and_distinct():
    names = {entry_name(parse_source(v, "X")) for v in ("hf://o/n", "hf://o/n@v1", "s3://o/n", "gs://o/n")}
    assert len(names) == 4
    assert entry_name(parse_source("hf://o/n", "X")) == entry_name(parse_source("hf://o/n@main", "X"))
    name = entry_name(parse_source("s3://my-bucket/drafts/llama 3", "X"))
    assert name.startswith("s3--my-bucket-drafts-llama-3--") and "/" not in name


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("config.json", "config.json"),
        ("sub/./model.bin", "sub/model.bin"),
        ("a//b", "a/b"),
        ("../escape", None),
        ("a/../../escape", None),
        ("/etc/passwd", None),
        ("a\\..\\b", None),
        ("", None),
        ("..", None),
    ],
)
def test_relative_name(name, ok):
    if ok is None:
        with pytest.raises(MaterializeError):
            relative_name("s3://b/p", name)
    else:
        assert relative_name("s3://b/p", name) == ok


def test_redaction_masks_every_secret_variable():
    env = {"AWS_SECRET_ACCESS_KEY": "abcd1234", "HF_TOKEN": "hf_xyz", "DB_PASSWORD": "pw-9999", "PATH": "/bin"}
    secrets = secret_values(env)
    assert sorted(secrets) == ["abcd1234", "hf_xyz", "pw-9999"]
    assert redact("key abcd1234 token hf_xyz path /bin", secrets) == "key *** token *** path /bin"


@pytest.mark.parametrize(
    ("env", "field", "value"),
    [
        ({}, "timeout", 30.0),
        ({"NIM_DOWNLOAD_TIMEOUT": "2.5"}, "timeout", 2.5),
        ({"NIM_DOWNLOAD_RETRIES": "0"}, "retries", 0),
        ({"NIM_DOWNLOAD_VERIFY": "size"}, "verify_checksums", False),
        ({"NIM_DOWNLOAD_CHUNK_MB": "8"}, "chunk_bytes", 8 * 1024 * 1024),
        ({"NIM_S3_ANONYMOUS": "true"}, "s3_anonymous", True),
        ({}, "s5cmd", "auto"),
        ({"NIM_S5CMD": "auto"}, "s5cmd", "auto"),
        ({"NIM_S5CMD": "1"}, "s5cmd", "on"),
        ({"NIM_S5CMD": "off"}, "s5cmd", "off"),
    ],
)
def test_settings(env, field, value):
    assert getattr(download_settings(env), field) == value


@pytest.mark.parametrize(
    "env",
    [
        {"NIM_DOWNLOAD_TIMEOUT": "soon"},
        {"NIM_DOWNLOAD_RETRIES": "-1"},
        {"NIM_DOWNLOAD_VERIFY": "md5"},
        {"NIM_S5CMD": "sometimes"},
    ],
)
def test_bad_settings_are_config_errors(env):
    with pytest.raises(ConfigError) as err:
        download_settings(env)
    assert next(iter(env)) in str(err.value)


def test_progress_fields_and_line():
    fields = progress_fields("s3://b/p", done=50 * 1024 * 1024, total=100 * 1024 * 1024, elapsed=5.0)
    assert fields["rate_bytes_per_s"] == 10 * 1024 * 1024 and fields["eta_s"] == 5.0
    assert format_line(fields) == "downloading s3://b/p: 50.0 MiB / 100.0 MiB (50%), 10.0 MiB/s, ETA 5s"
    assert fields["event"] == "download_progress"


def test_marker_holds_no_environment():
    doc = marker_document("s3://b/p", [("b.bin", 3), ("a.json", 2)], now=0)
    assert doc == {
        "complete": True,
        "uri": "s3://b/p",
        "files": [{"path": "a.json", "size": 2}, {"path": "b.bin", "size": 3}],
        "size": 5,
        "completed_at": "1970-01-01T00:00:00Z",
    }


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_progress_logs_every_interval_without_terminal():
    lines: list[str] = []
    clock = FakeClock()
    progress = Progress("s3://b/p", lines.append, interval=5.0, clock=clock)
    progress.start(total_bytes=100, files=2)
    for _ in range(10):
        clock.now += 1.0
        progress.add(10)
    assert lines[0] == "downloading s3://b/p: 2 files, 100 B"
    assert [line.split(": ", 1)[1].split(" (")[0] for line in lines[1:]] == ["50 B / 100 B", "100 B / 100 B"]


def test_progress_draws_a_bar_on_a_terminal():
    terminal = io.StringIO()
    clock = FakeClock()
    progress = Progress("hf://o/n", lambda m: None, terminal=terminal, clock=clock)
    progress.start(total_bytes=4, files=1)
    clock.now = 1.0
    progress.add(2)
    progress.finish()
    out = terminal.getvalue()
    assert out.startswith("\rdownloading hf://o/n: 2 B / 4 B (50%)") and out.endswith("(50%), 2 B/s, ETA 1s\n")


def _tree(tmp_path, files):
    for name, data in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    return tmp_path


@pytest.mark.parametrize(
    ("on_disk", "listed", "problem"),
    [
        ({"a": b"12"}, [RemoteFile("a", 2, md5=hashlib.md5(b"12").hexdigest())], None),
        ({"a": b"12"}, [RemoteFile("a", 2, sha256=hashlib.sha256(b"12").hexdigest())], None),
        ({"a": b"12"}, [RemoteFile("a", 2, md5=hashlib.md5(b"13").hexdigest())], "checksum differs"),
        ({"a": b"12"}, [RemoteFile("a", 3)], "size 2 differs"),
        ({"a": b"12", "b": b""}, [RemoteFile("a", 2)], "unexpected ['b']"),
        ({"a": b"12"}, [RemoteFile("a", 2), RemoteFile("c/d", 1)], "missing ['c/d']"),
        ({}, [], "holds no files"),
    ],
)
def test_verify(tmp_path, on_disk, listed, problem):
    dest = _tree(tmp_path, on_disk)
    with Hasher(dest, enabled=True) as hasher:
        if listed:
            hasher.file_done(listed[0])  # as a backend reports a finished file early
        if problem is None:
            verify("s3://b/p", dest, listed, hasher)
        else:
            with pytest.raises(MaterializeError) as err:
                verify("s3://b/p", dest, listed, hasher)
            assert problem in str(err.value)


def test_completion_writer_reports_the_finished_file_once_and_flushed(tmp_path):
    path, seen, finished = tmp_path / "f", [], []
    with open(path, "wb") as fh:
        writer = CompletionWriter(fh, 4, seen.append, lambda: finished.append(path.read_bytes()))
        for chunk in (b"ab", b"", b"cd"):
            writer.write(chunk)
            assert finished == ([] if chunk != b"cd" else [b"abcd"])  # on disk when reported, not in a buffer
        writer.write(b"")
    assert seen == [2, 0, 2, 0] and finished == [b"abcd"]  # once


def test_size_mode_never_hashes(tmp_path):
    dest = _tree(tmp_path, {"a": b"12"})
    with Hasher(dest, enabled=False) as hasher:
        verify("s3://b/p", dest, [RemoteFile("a", 2, md5="0" * 32)], hasher)


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("model-00001.safetensors", True),
        ("sub/shard-*.bin", True),
        ("it's.bin", True),
        ('a"b', False),
        ("a$b", False),
        ("a`b", False),
        ("a\nb", False),
        ("a\tb", False),
    ],
)
def test_names_the_s5cmd_command_file_can_carry(name, ok):
    from nim_specdec.fetchers.buckets.s5cmd import scriptable

    assert scriptable(name) is ok


@pytest.mark.parametrize(
    ("message", "transient"),
    [
        ("s5cmd exit 1: connection reset by peer", True),
        ("s5cmd exit 1: InternalError: status code: 500", True),
        ("s5cmd exit 1: AccessDenied: status code: 403", False),
        ("s5cmd exit 1: NoSuchKey", False),
    ],
)
def test_s5cmd_failures_worth_a_retry(message, transient):
    from nim_specdec.fetchers.buckets.s5cmd import failure

    assert failure(message).transient is transient


def test_a_listing_without_end_is_cut_by_count_and_by_time():
    import time

    from nim_specdec.fetchers.transfer.safety import MAX_LISTED, ListingBudget

    budget = ListingBudget("s3://b/p", timeout=30.0)
    for _ in range(MAX_LISTED):
        budget.step()
    with pytest.raises(MaterializeError, match="more than 100000"):
        budget.step()
    late = ListingBudget("s3://b/p", timeout=30.0)
    assert late.seconds == 600.0
    late.deadline = time.monotonic() - 1  # as if the store had kept paging for ten minutes
    with pytest.raises(MaterializeError, match="took more than 600 s"):
        late.step()
