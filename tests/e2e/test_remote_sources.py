"""Remote sources end to end: the target from gs:// (gcp-storage-emulator) and the copy-of-target
draft from s3:// (moto in server mode), both downloaded into the cache by the launcher, linked into
the workspace and served by vLLM, whose spec-decode counters show the draft at work."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from servers.gcs_store import GCSStore
from servers.s3_store import S3Store

from .conftest import DRAFT_MODEL_CONFIG, base_env, launch

pytestmark = pytest.mark.e2e


def _files(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.fixture(scope="session")
def remote_run(demo_model, e2e_dir):
    s3, gcs = S3Store().start(), GCSStore().start()
    try:
        target_uri = gcs.publish("demo/target", _files(demo_model / "target"))
        draft_uri = s3.publish("demo/draft-copy", _files(demo_model / "draft-copy"))
        env = base_env(e2e_dir / "remote")
        env.update(s3.env(), **gcs.env(), NIM_MODEL_PATH=target_uri, NIM_DRAFT_MODEL_PATH=draft_uri,
                   NIM_SERVED_MODEL_NAME="demo-remote")
        record = launch("remote", env, ["--speculative-config", json.dumps(DRAFT_MODEL_CONFIG)], e2e_dir)
        listing = subprocess.run([sys.executable, "-m", "nim_specdec", "cache", "ls", "--json"],
                                 env={**os.environ, **env}, capture_output=True, text=True, timeout=60)
        record.extra.update(target_uri=target_uri, draft_uri=draft_uri, cache_ls=listing)
        return record
    finally:
        s3.close()
        gcs.close()


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


def test_draft_from_s3_drafts_and_is_accepted(remote_run):
    growth = remote_run.growth
    assert growth.drafts > 0, f"{growth}" + remote_run.context()
    assert growth.accepted == growth.draft_tokens, f"{growth}" + remote_run.context()


def test_secrets_never_reach_the_log(remote_run):
    for secret in ("testing-secret-value", "ya29.testing-token-value"):
        assert secret not in remote_run.log
