"""Only regular files are read where files are expected: a FIFO does not block, a device is not read
without end, a folder is refused; whole-file reads are capped. Each reader that takes a path uses the helper."""

from __future__ import annotations

import errno
import json
import os
import threading
from pathlib import Path

import pytest

from fuzz_plan_cases import EAGLE3, LLAMA
from nim_specdec.cli.main import main
from nim_specdec.errors import ConfigError, MaterializeError
from nim_specdec.fetchers.integrity.digests import file_digest
from nim_specdec.files.regular_file import open_regular_text, read_regular
from nim_specdec.plan.method.builtin import load_registry
from nim_specdec.preflight.config_file import read_bounded
from nim_specdec.preflight.pickled_weights import read_pickled_tensors
from nim_specdec.preflight.safetensors_header import HeaderError, read_header


def fifo(tmp_path: Path, name: str = "f") -> Path:
    path = tmp_path / name
    os.mkfifo(path)
    return path


def linked(tmp_path: Path, target: str, name: str = "l") -> Path:
    path = tmp_path / name
    path.symlink_to(target)
    return path


KINDS = {
    "fifo": (fifo, "is a FIFO"),
    "dev_zero": (lambda t: linked(t, "/dev/zero"), "is a character device"),
    "folder": (lambda t: t, "is a folder"),
}


def in_time(call, seconds: float = 20.0):
    """Run `call` on a thread; fail (rather than hang the suite) if it blocks, as an open of a FIFO would."""
    result: dict = {}

    def target():
        try:
            result["value"] = call()
        except BaseException as err:  # noqa: BLE001 - handed to the test
            result["error"] = err

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "the read blocked"
    return result


@pytest.mark.parametrize("kind", KINDS)
def test_the_helper_refuses_what_is_not_a_regular_file_without_blocking(tmp_path, kind):
    make, fragment = KINDS[kind]
    result = in_time(lambda: read_regular(make(tmp_path), 1024))
    err = result["error"]
    assert isinstance(err, OSError) and err.errno == errno.EINVAL and fragment in err.strerror


def test_the_helper_caps_a_whole_file_read_and_reads_a_link_to_a_file(tmp_path):
    (tmp_path / "big").write_bytes(b"x" * 2048)
    with pytest.raises(OSError) as err:
        read_regular(tmp_path / "big", 1024)
    assert err.value.errno == errno.EFBIG and "larger than 1024 bytes" in err.value.strerror
    assert read_regular(linked(tmp_path, str(tmp_path / "big")), 4096) == b"x" * 2048
    with pytest.raises(OSError, match="larger than"):
        open_regular_text(tmp_path / "big", 100)


def test_a_file_read_through_the_helper_is_blocking_again(tmp_path):
    (tmp_path / "f").write_bytes(b"abc")
    with open_regular_text(tmp_path / "f", 10) as fh:
        assert os.get_blocking(fh.fileno()) and fh.read() == "abc"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("reader", ["config", "safetensors", "pickled", "digest", "builtin"])
def test_each_reader_refuses_a_non_file_in_one_error(tmp_path, kind, reader):
    make, fragment = KINDS[kind]
    sub = tmp_path / "d"
    sub.mkdir()
    bad = make(sub) if kind != "folder" else sub / "x.json"
    if kind == "folder":
        bad.mkdir()
    calls = {
        "config": lambda: read_bounded(bad, 1024, "NIM_MODEL_PATH"),
        "safetensors": lambda: read_header(bad),
        "pickled": lambda: read_pickled_tensors(bad),
        "digest": lambda: file_digest(bad, "sha256"),
        "builtin": lambda: load_registry(sub),
    }
    if reader == "builtin" and kind != "folder":
        os.rename(bad, sub / "x.json")
    err = in_time(calls[reader])["error"]
    expected = {
        "config": MaterializeError,
        "safetensors": HeaderError,
        "pickled": HeaderError,
        "digest": OSError,
        "builtin": ConfigError,
    }[reader]
    assert isinstance(err, expected), err
    if kind == "dev_zero":  # a link out of the folder: never opened, whatever it points at
        fragment = "Too many levels of symbolic links" if reader == "digest" else "a link to a file outside its folder"
    assert fragment in str(err), err


@pytest.mark.parametrize("target", ["fifo", "dev_zero"])
def test_plan_with_a_weights_file_that_is_not_a_file_is_exit_3(tmp_path, monkeypatch, capsys, target):
    for name, config in (("target", LLAMA), ("draft", EAGLE3)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(config))
    weights = tmp_path / "draft" / "model.safetensors"
    os.mkfifo(weights) if target == "fifo" else weights.symlink_to("/dev/zero")
    for key in [k for k in os.environ if k.startswith("NIM_")]:
        monkeypatch.delenv(key)
    for key, value in {
        "NIM_SPECDEC_ENABLE": "1",
        "NIM_MODEL_PATH": str(tmp_path / "target"),
        "NIM_DRAFT_MODEL_PATH": str(tmp_path / "draft"),
        "NIM_CACHE_PATH": str(tmp_path / "cache"),
        "NIM_SPECDEC_ARGS": json.dumps({"speculative_config": {"method": "eagle3", "num_speculative_tokens": 3}}),
    }.items():
        monkeypatch.setenv(key, value)
    code = in_time(lambda: main(["plan"]), 60)["value"]
    stderr = capsys.readouterr().err
    assert code == 3 and len(stderr.strip().splitlines()) == 1, stderr
    expected = "not a regular file" if target == "fifo" else "a link to a file outside its folder"
    assert "model.safetensors" in stderr and expected in stderr, stderr
