"""Remote sources end to end: the target from gs:// (gcp-storage-emulator) and the copy-of-target
draft from s3:// (moto in server mode), both downloaded into the cache by the launcher, linked into
the workspace and served by vLLM (the run is in conftest; its drafting is checked in test_draft_model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


def test_remote_target_and_draft_are_linked_from_the_cache(remote_run):
    workspace = Path(remote_run.env["NIM_WORKSPACE"])
    cache = Path(remote_run.env["NIM_CACHE_PATH"]).resolve()
    for name in ("target", "my_draft"):
        link = workspace / name
        assert link.is_symlink(), f"{link} is not a link" + remote_run.context()
        assert cache in link.resolve().parents, f"{link} -> {link.resolve()}"
        assert (link / "config.json").is_file()


def test_cache_lists_both_downloads(remote_run):
    listing = remote_run.extra["cache_ls"]
    assert listing.returncode == 0, listing.stderr
    uris = {json.loads(line)["uri"] for line in listing.stdout.splitlines() if line.strip()}
    assert {remote_run.extra["target_uri"], remote_run.extra["draft_uri"]} <= uris


def test_secrets_never_reach_the_log(remote_run):
    for secret in ("testing-secret-value", "ya29.testing-token-value"):
        assert secret not in remote_run.log
