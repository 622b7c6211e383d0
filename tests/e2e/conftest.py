"""The run only the end-to-end folder reads: target from gs:// (gcp-storage-emulator), copy-of-target draft
from s3:// (moto in server mode), both downloaded by the launcher, linked into the workspace and served.
The shared runs (off, ngram, eagle3) and the demo model come from tests/vllm_runs.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from servers.gcs_store import GCSStore
from servers.s3_store import S3Store
from vllm_runs import SERVER_ARGS, base_env, launch

# Model-free mode: the config is given as a vLLM argument and names the draft by a bare name.
DRAFT_MODEL_CONFIG = {"method": "draft_model", "model": "my_draft", "num_speculative_tokens": 3}


def _files(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.fixture(scope="session")
def remote_run(demo_model, runs_dir):
    s3, gcs = S3Store().start(), GCSStore().start()
    try:
        target_uri = gcs.publish("demo/target", _files(demo_model / "target"))
        draft_uri = s3.publish("demo/draft-copy", _files(demo_model / "draft-copy"))
        env = base_env(runs_dir / "remote", demo_model)
        env.update(
            s3.env(),
            **gcs.env(),
            NIM_MODEL_PATH=target_uri,
            NIM_DRAFT_MODEL_PATH=draft_uri,
            NIM_SERVED_MODEL_NAME="demo-remote",
        )
        record = launch("remote", env, [*SERVER_ARGS, "--speculative-config", json.dumps(DRAFT_MODEL_CONFIG)], runs_dir)
        listing = subprocess.run(
            [sys.executable, "-m", "nim_specdec", "cache", "ls", "--json"],
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            timeout=60,
        )
        record.extra.update(target_uri=target_uri, draft_uri=draft_uri, cache_ls=listing)
        return record
    finally:
        s3.close()
        gcs.close()
