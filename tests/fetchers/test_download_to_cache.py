"""`nim-specdec download-to-cache`, NIM's name for the pre-fetch: with URIs it is `download`; without, it
fetches the target and draft the NIM_* variables name, as serve would (run as a user would, moto for s3://)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core_fixtures import EAGLE3, LLAMA
from servers.harness import SRC
from servers.s3_store import S3Store


def run(args, env_extra, cache: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "HF_", "NGC_", "NIM_"))}
    env.update(PYTHONPATH=str(SRC), NIM_CACHE_PATH=str(cache), **env_extra)
    return subprocess.run(
        [sys.executable, "-m", "nim_specdec", *args], env=env, capture_output=True, text=True, timeout=120
    )


@pytest.fixture(scope="module")
def s3():
    store = S3Store().start()
    yield store
    store.close()


def test_with_uris_it_is_download(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    alias, plain = (run([name, str(model)], {}, tmp_path / "cache") for name in ("download-to-cache", "download"))
    assert alias.returncode == plain.returncode == 0, alias.stderr
    assert alias.stdout == plain.stdout == f"{model}\n"


def test_without_uris_it_fetches_the_target_and_draft_the_variables_name(tmp_path, s3):
    weights = b"\x01" * 4096
    target = s3.publish("dtc/target", {"config.json": json.dumps(LLAMA).encode(), "model.safetensors": weights})
    draft = s3.publish("dtc/draft", {"config.json": json.dumps(EAGLE3).encode(), "model.safetensors": weights})
    env = {**s3.env(), "NIM_MODEL_PATH": target, "NIM_DRAFT_MODEL_PATH": draft, "NIM_SPECDEC_ENABLE": "1"}
    done = run(["download-to-cache"], env, tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    directories = [Path(line) for line in done.stdout.splitlines()]
    assert len(directories) == 2 and all(tmp_path / "cache" in d.parents for d in directories), done.stdout
    assert [json.loads((d / "config.json").read_text()) for d in directories] == [LLAMA, EAGLE3]
    assert all((d / "model.safetensors").read_bytes() == weights for d in directories)
    listed = [json.loads(line) for line in run(["cache", "ls", "--json"], {}, tmp_path / "cache").stdout.splitlines()]
    assert {entry["uri"] for entry in listed} == {target, draft}


def test_without_uris_or_a_model_it_says_what_to_set(tmp_path):
    done = run(["download-to-cache"], {}, tmp_path / "cache")
    errors = [line for line in done.stderr.splitlines() if line.startswith("nim-specdec: error:")]
    assert done.returncode == 2 and len(errors) == 1 and "Traceback" not in done.stderr
    assert "NIM_MODEL_PATH" in errors[0]
    assert not (tmp_path / "cache").exists()


def test_a_hub_id_vllm_fetches_itself_is_named_not_downloaded(tmp_path):
    done = run(["download-to-cache"], {"NIM_PASSTHROUGH_ARGS": "--model org/some-model"}, tmp_path / "cache")
    assert done.returncode == 2 and "org/some-model is a hub id vLLM downloads itself" in done.stderr
    assert "nim-specdec: error: download-to-cache: no URI was given" in done.stderr and done.stdout == ""
