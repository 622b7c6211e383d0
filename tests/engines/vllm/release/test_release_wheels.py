"""Each known vLLM release's own code, read from its wheel (tests/vllm_release_source.py) where it is not the
installed one: its snapshot is what scripts/vllm_schema_gen.py writes from it (0.32.0 installed, compared by
test_vllm_schema_drift.py too), and every command line the launcher builds for that release (each built-in,
each guide example) parses with that release's own serve-argument parser, speculative keys and methods."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from contract.test_guide_plans import CASES as GUIDE_CASES
from contract.test_guide_plans import ROOT
from core_fixtures import facts, make_models
from nim_specdec.engines.vllm.check.request import serve_args
from nim_specdec.engines.vllm.release.vllm_schema import knowledge_for, known_versions
from nim_specdec.launch.resolve import plan_for
from nim_specdec.plan.method.builtin import default_config_dir, load_registry
from vllm_release_source import INSTALLED, unpacked

REPO = Path(__file__).resolve().parents[4]
GENERATOR = REPO / "scripts" / "vllm_schema_gen.py"
PARSE = Path(__file__).with_name("release_parse.py")


def _run(version: str, argv: list[str], stdin: str = "") -> subprocess.CompletedProcess:
    """A Python process with release `version` first on its path (the installed one as it is)."""
    env = {**os.environ, "VLLM_TARGET_DEVICE": "cpu", "PYTHONPATH": os.pathsep.join(sys.path)}
    if version != INSTALLED:
        env["PYTHONPATH"] = os.pathsep.join([str(unpacked(version)), *sys.path])
    return subprocess.run(
        [sys.executable, *argv], input=stdin, env=env, capture_output=True, text=True, timeout=600, check=False
    )


def test_every_known_release_is_tested_here():
    assert known_versions() == ("0.32.0", "0.33.0", "0.34.0")


@pytest.mark.parametrize("version", known_versions())
def test_the_snapshot_is_what_the_generator_writes_from_the_release(version):
    code = f"import json, runpy, sys; g = runpy.run_path({str(GENERATOR)!r})['generate']; json.dump(g(), sys.stdout)"
    done = _run(version, ["-c", code])
    assert done.returncode == 0, done.stderr[-2000:]
    generated = json.loads(done.stdout)
    assert generated["vllm_version"] == version  # the release on the path, not the installed one
    assert generated == knowledge_for(version).data


def _commands(version: str, root: Path) -> list[tuple[str, list[str]]]:
    """Serve arguments the launcher builds for `version`: each built-in with speculation on, each guide example."""
    make_models(root)
    shipped = load_registry(default_config_dir())
    cases: list[tuple[str, dict[str, str], list[str]]] = [
        (f"builtin {entry.file}", {"NIM_SPECDEC_ENABLE": "1", "NIM_MODEL_NAME": entry.model_id}, [])
        for entry in shipped
    ]
    for name, (env_in, args) in sorted(GUIDE_CASES.items()):
        cases.append((f"guide {name}", {k: v.replace(ROOT, str(root)) for k, v in env_in.items()}, list(args)))
    out = []
    for name, env, args in cases:
        # the guide's examples name the test registry's models; the built-ins, the shipped ones
        registry = shipped if name.startswith("builtin") else facts().registry
        known = replace(facts(), registry=registry, vllm_version=version)
        _, plan = plan_for({"NIM_CACHE_PATH": f"{root}/cache", **env}, args, known)
        out.append((name, serve_args(plan.launch.argv)))
    return out


@pytest.mark.parametrize("version", known_versions())
def test_every_command_the_launcher_builds_parses_with_the_releases_own_parser(version, tmp_path):
    commands = _commands(version, tmp_path)
    assert len(commands) == len(load_registry(default_config_dir())) + len(GUIDE_CASES)
    assert any("--speculative-config" in args for _, args in commands)
    done = _run(version, [str(PARSE)], json.dumps(commands))
    assert done.returncode == 0, done.stderr[-2000:]
    verdicts = json.loads(done.stdout)
    assert verdicts.pop("__release__").split("+")[0] == version  # that release's parser judged them
    assert verdicts == {name: None for name, _ in commands}


def test_the_releases_parser_refuses_what_it_should():
    """The harness can fail: a key 0.34 removed, and a method it removed, are refused by 0.34's own code."""
    spec = {"method": "ngram", "num_speculative_tokens": 3, "disable_padded_drafter_batch": True}
    commands = [
        ("removed key", ["--model", "m", "--speculative-config", json.dumps(spec)]),
        ("removed method", ["--model", "m", "--speculative-config", '{"method": "custom_class"}']),
        ("unknown option", ["--model", "m", "--no-such-option"]),
    ]
    done = _run("0.34.0", [str(PARSE)], json.dumps(commands))
    assert done.returncode == 0, done.stderr[-2000:]
    verdicts = json.loads(done.stdout)
    assert "disable_padded_drafter_batch" in verdicts["removed key"]
    assert verdicts["removed method"] == "no method 'custom_class'"
    assert "--no-such-option" in verdicts["unknown option"]
