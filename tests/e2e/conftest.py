"""The run only the end-to-end folder reads, a NIM deployment as a platform engineer writes it: the model named
by its NIM name (NIM_MODEL_NAME, a built-in entry in NIM_BUILTIN_CONFIG_DIR whose source is gs://, on
gcp-storage-emulator), a copy-of-target draft from s3:// (moto in server mode), both downloaded by the launcher,
linked into the workspace and served behind two API keys (vLLM's --api-key takes a list). The workload and the
smoke check carry the second key; test_api_keys's probe asks with none, a wrong one and the first.
The shared runs (off, ngram, eagle3) and the demo model come from tests/vllm_runs.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from e2e.keyed_deployment import DRAFT_MODEL_CONFIG, KEYS, NIM_NAME, REPO_ID
from servers.gcs_store import GCSStore
from servers.s3_store import S3Store
from vllm_runs import SERVER_ARGS, base_env, launch


def _files(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.fixture(scope="session")
def remote_run(demo_model, runs_dir):
    s3, gcs = S3Store().start(), GCSStore().start()
    try:
        target_uri = gcs.publish("demo/target", _files(demo_model / "target"))
        draft_uri = s3.publish("demo/draft-copy", _files(demo_model / "draft-copy"))
        configs = runs_dir / "remote-builtin"
        configs.mkdir(parents=True, exist_ok=True)
        entry = {"model_id": REPO_ID, "nim_name": NIM_NAME, "source": target_uri, "speculative_config": {}}
        (configs / "demo.json").write_text(json.dumps(entry))
        env = base_env(runs_dir / "remote", demo_model)
        env.update(
            s3.env(),
            **gcs.env(),
            NIM_BUILTIN_CONFIG_DIR=str(configs),
            NIM_MODEL_NAME=NIM_NAME,
            NIM_DRAFT_MODEL_PATH=draft_uri,
        )
        args = [*SERVER_ARGS, "--api-key", *KEYS, "--speculative-config", json.dumps(DRAFT_MODEL_CONFIG)]
        record = launch("remote", env, args, runs_dir, smoke=True, api_key=KEYS[1])
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
