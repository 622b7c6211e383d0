"""`nim-specdec download` and `nim-specdec cache ls`, run as a user would, plus ngc:// and local edges."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

from nim_specdec.errors import EXIT_MATERIALIZE
from servers.harness import SRC


def run(args, env_extra, cache):
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "HF_", "NGC_"))}
    env.update(PYTHONPATH=str(SRC), NIM_CACHE_PATH=str(cache), **env_extra)
    return subprocess.run(
        [sys.executable, "-m", "nim_specdec", *args], env=env, capture_output=True, text=True, timeout=120
    )


def test_cache_ls_lists_completed_and_incomplete_entries(tmp_path):
    entries = tmp_path / "sources" / "entries"
    done = entries / "s3--b-p--0123456789abcdef"
    (done / "files").mkdir(parents=True)
    (done / "complete.json").write_text(
        json.dumps(
            {
                "complete": True,
                "uri": "s3://b/p",
                "files": [{"path": "w", "size": 2048}],
                "size": 2048,
                "completed_at": "2026-01-01T00:00:00Z",
            }
        )
    )
    (entries / "gs--b-q--fedcba9876543210" / "files").mkdir(parents=True)
    table = run(["cache", "ls"], {}, tmp_path)
    assert table.returncode == 0
    lines = table.stdout.splitlines()
    assert lines[0].split()[:3] == ["URI", "SIZE", "FILES"]
    assert "s3://b/p" in lines[2] and "2.0 KiB" in lines[2] and "2026-01-01T00:00:00Z" in lines[2]
    assert "incomplete" in lines[1]
    as_json = [json.loads(line) for line in run(["cache", "ls", "--json"], {}, tmp_path).stdout.splitlines()]
    assert {e["uri"] for e in as_json} == {"s3://b/p", ""}


def test_download_local_directory_prints_it_unchanged(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    proc = run(["download", str(model)], {}, tmp_path / "cache")
    assert proc.returncode == 0 and proc.stdout.strip() == str(model)
    assert not (tmp_path / "cache").exists()


def test_download_rejects_bad_uri_before_any_download(tmp_path):
    proc = run(["download", "ftp://x/y"], {}, tmp_path)
    assert proc.returncode == 2 and "unsupported scheme" in proc.stderr and "Traceback" not in proc.stderr


def test_ngc_sdk_is_pointed_at_loopback_and_fails_cleanly(tmp_path):
    """ngcsdk takes its base URL from NGC_CLI_API_URL: an unreachable loopback port ends in exit 3, key unprinted."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    key = "nvapi-testing-key-0123456789"
    proc = run(
        ["download", "ngc://nvidia/team/draft:1.0"],
        {
            "NGC_CLI_API_URL": f"https://127.0.0.1:{port}",
            "NGC_CLI_AUTH_URL": f"https://127.0.0.1:{port}",
            "NGC_API_KEY": key,
            "NIM_DOWNLOAD_RETRIES": "0",
            "NIM_DOWNLOAD_TIMEOUT": "2",
        },
        tmp_path,
    )
    assert proc.returncode == EXIT_MATERIALIZE, proc.stderr
    assert "ngc://nvidia/team/draft@1.0" in proc.stderr and f"127.0.0.1:{port}" in proc.stderr
    assert key not in proc.stderr + proc.stdout and "Traceback" not in proc.stderr


def test_ngc_without_version_is_refused(tmp_path):
    proc = run(["download", "ngc://nvidia/draft"], {"NGC_API_KEY": "nvapi-x"}, tmp_path)
    assert proc.returncode == EXIT_MATERIALIZE and "no version given" in proc.stderr
