"""`nim-specdec prepare` with a remote target and a remote draft (moto on loopback): the typed sources of
the plan are fetched, linked into the workspace, and the printed plan holds where they landed."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

from servers.harness import cli_env, model_files
from servers.s3_store import S3Store

CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 128, "intermediate_size": 256,
          "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 64,
          "vocab_size": 330, "max_position_embeddings": 2048, "torch_dtype": "bfloat16"}
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
        done = subprocess.run([sys.executable, "-m", "nim_specdec", "prepare", "--speculative-config", json.dumps(DRAFT_MODEL)],
                              env=env, capture_output=True, text=True, timeout=300)
    finally:
        store.close()
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    workspace = Path(plan["workspace"])
    for key, link in (("target", workspace / "target"), ("draft", workspace / "my_draft")):
        local = Path(plan[key]["local_dir"])
        assert cache.resolve() in local.resolve().parents, (key, local)
        assert link.is_symlink() and link.resolve() == local.resolve()
        assert (link / "config.json").read_bytes() == files["config.json"]
    assert plan["target"]["model"] == str(workspace / "target")
    assert plan["speculative"]["config"]["model"] == plan["draft"]["path"] == str(workspace / "my_draft")
