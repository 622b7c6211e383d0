"""`nim-specdec prepare` with a remote target and a remote draft (moto on loopback): the typed sources of
the plan are fetched, linked into the workspace, and the printed plan holds where they landed."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

from servers.harness import TINY_LLAMA_CONFIG as CONFIG
from servers.harness import cli_env, model_files
from servers.s3_store import S3Store

DRAFT_MODEL = {"method": "draft_model", "model": "my_draft", "num_speculative_tokens": 3}


def test_prepare_fetches_and_links_remote_target_and_draft(tmp_path):
    store = S3Store().start()
    try:
        # A config vLLM's own check accepts (prepare runs it once the files are here).
        files = {**model_files(4096), "config.json": json.dumps(CONFIG).encode()}
        target = store.publish(f"t{uuid.uuid4().hex[:8]}", files)
        draft = store.publish(f"d{uuid.uuid4().hex[:8]}", files)
        cache = tmp_path / "cache"
        env = cli_env(store, cache, NIM_MODEL_PATH=target, NIM_DRAFT_MODEL_PATH=draft, NIM_SPECDEC_PREFLIGHT="off")
        done = subprocess.run(
            [sys.executable, "-m", "nim_specdec", "prepare", "--speculative-config", json.dumps(DRAFT_MODEL)],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        store.close()
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    # vLLM judged the command from the two config.json files while the weights downloaded.
    assert plan["vllm_check"]["ran"] is True and plan["vllm_check"]["while_downloading"] is True, done.stderr
    assert "vLLM check while downloading" in done.stderr
    workspace = Path(plan["workspace"])
    for key, link in (("target", workspace / "target"), ("draft", workspace / "my_draft")):
        local = Path(plan[key]["local_dir"])
        assert cache.resolve() in local.resolve().parents, (key, local)
        assert link.is_symlink() and link.resolve() == local.resolve()
        assert (link / "config.json").read_bytes() == files["config.json"]
    assert plan["target"]["model"] == str(workspace / "target")
    assert plan["speculative"]["config"]["model"] == plan["draft"]["path"] == str(workspace / "my_draft")


def test_a_configuration_vllm_refuses_stops_the_download(tmp_path):
    """Remote target, weights slow to arrive: vLLM's check runs on config.json while they download, and its
    refusal stops the download (nothing cached) long before it would end."""
    from nim_specdec.fetchers.volume.cache import CacheLayout
    from servers.fault_proxy import Fault
    from servers.harness import WEIGHTS

    store = S3Store().start()
    try:
        files = {**model_files(3_000_000), "config.json": json.dumps(CONFIG).encode()}
        target = store.publish(f"t{uuid.uuid4().hex[:8]}", files)
        # 3 MB at 50 kB/s: a minute to download, far longer than the check.
        store.proxy.inject(Fault("slow", WEIGHTS, times=-1, bytes_per_second=50_000))
        cache = tmp_path / "cache"
        env = cli_env(store, cache, NIM_MODEL_PATH=target, NIM_SPECDEC_ENABLE="0", NIM_SPECDEC_PREFLIGHT="off")
        # max_position_embeddings is 2048: vLLM refuses a longer max_model_len, which only config.json shows.
        done = subprocess.run(
            [sys.executable, "-m", "nim_specdec", "prepare", "--max-model-len", "100000"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        weight_requests = store.proxy.requests("GET", WEIGHTS)
    finally:
        store.close()
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("nim-specdec: error:")]
    assert len(errors) == 1 and "refuses this configuration" in errors[0] and "max_model_len" in errors[0], done.stderr
    assert "vLLM check while downloading" in done.stderr and weight_requests, done.stderr
    # The download was stopped: the weights never went out whole (at 50 kB/s they take a minute).
    assert all(r.sent < r.size for r in weight_requests), [(r.sent, r.size) for r in weight_requests]
    layout = CacheLayout.under(cache)
    assert not list(cache.rglob("complete.json")) and not list((layout.root / "entries").iterdir())
    # What the stopped download verified stays in its own owner-only folder for the next start to resume,
    # never an entry: one folder at most, and nothing in it reaches the cache unverified.
    kept = list(layout.tmp_dir().iterdir())
    assert len(kept) <= 1 and all(p.stat().st_mode & 0o777 == 0o700 for p in kept), kept
