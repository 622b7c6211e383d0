"""vLLM's method table: each rule reads its row, a method added as one row (and its snapshot) is planned, checked
and documented (docs/engine.md's table is held to it by tests/contract/test_docs.py)."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import replace
from pathlib import Path

import pytest

from nim_specdec.engines.vllm.release import methods, vllm_schema
from nim_specdec.engines.vllm.release.async_rules import keeps_async
from nim_specdec.engines.vllm.release.methods import BY_NAME, METHODS, names_where
from nim_specdec.engines.vllm.release.runner_choice import v2_refuses_method
from nim_specdec.engines.vllm.schedule.schedule_rules import schedule_drop
from nim_specdec.engines.vllm.spec.method_infer import infer_method
from nim_specdec.errors import ConfigError
from nim_specdec.launch.resolve import plan_for
from nim_specdec.plan.plan_facts import Facts
from nim_specdec.plan.plan_model import plan_json

ROOT = Path(__file__).resolve().parents[4]
RELEASE = "0.34.0"


def _script():
    spec = importlib.util.spec_from_file_location("methods_doc", ROOT / "scripts" / "methods_doc.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


def test_every_method_of_a_known_release_has_a_row():
    """A release's snapshot naming a method the table lacks would leave every rule guessing about it."""
    releases = [vllm_schema.knowledge_for(v) for v in vllm_schema.known_versions()]
    snapshots = {m for known in releases for m in known.methods if m not in known.mtp_methods}
    assert sorted(snapshots - set(BY_NAME)) == []


def test_the_rules_read_the_rows():
    assert names_where("parallel") == ("dflash", "dspark")
    assert keeps_async("dflash") and not keeps_async("suffix") and keeps_async("deepseek_mtp")
    assert v2_refuses_method("0.32.0", "medusa") and not v2_refuses_method("0.33.0", "medusa")
    assert schedule_drop("0.33.0", "v1", "dspark", 1) is not None and schedule_drop("0.33.0", "v1", "dflash", 1) is None


@pytest.fixture
def with_peagle(monkeypatch):
    """A P-EAGLE-like method as one row, and the snapshot of a release that has it."""
    row = replace(
        BY_NAME["eagle3"],
        name="peagle",
        meaning="a P-EAGLE parallel draft head",
        parallel=True,
        v1_schedule=False,
        inferred_from_name=(),
        inferred_from_arch=("PEagleDraftModel",),
    )
    table = (*METHODS, row)
    monkeypatch.setattr(methods, "METHODS", table)
    monkeypatch.setattr(methods, "BY_NAME", {r.name: r for r in table})
    real = vllm_schema._snapshot

    def snapshot(version: str):
        data = json.loads(json.dumps(real(version)))
        data["methods"].append("peagle")
        data["enums"]["method"].append("peagle")
        return data

    monkeypatch.setattr(vllm_schema, "_snapshot", snapshot)
    return row


def _plan(models, tmp_path, config: dict, release: str = RELEASE):
    env = {
        "NIM_CACHE_PATH": str(tmp_path / "cache"),
        "NIM_SPECDEC_ENABLE": "1",
        "NIM_MODEL_PATH": str(models["target"]),
        "NIM_DRAFT_MODEL_PATH": str(models["draft"]),
    }
    facts = Facts(flavor="vllm", python="python3", vllm_version=release)
    return plan_json(plan_for(env, ["--speculative-config", json.dumps(config)], facts)[1])


@pytest.mark.parametrize("release", ["0.33.0", RELEASE])
def test_a_method_added_as_one_row_is_planned(with_peagle, models, tmp_path, release):
    """Its draft filled from NIM_DRAFT_MODEL_PATH, as the row's `model` says; 0.33 takes no custom method, so
    the method is the row's and the snapshot's, not a plugin's."""
    plan = _plan(models, tmp_path, {"method": "peagle", "num_speculative_tokens": 3}, release)
    assert plan["speculative"]["method"] == "peagle"
    assert plan["speculative"]["config"]["model"].endswith("/draft")
    assert plan["draft"]["source"] == str(models["draft"]) and plan["speculative"]["custom_method"] is None


def test_a_method_added_as_one_row_is_checked_and_documented(with_peagle, models, tmp_path):
    # checked: parallel drafting is its own, as the row says, and still refused for a method whose row does not
    _plan(models, tmp_path, {"method": "peagle", "num_speculative_tokens": 3, "parallel_drafting": True})
    with pytest.raises(ConfigError, match="only supported by the dflash and dspark and peagle methods"):
        _plan(models, tmp_path, {"method": "eagle3", "num_speculative_tokens": 3, "parallel_drafting": True})
    draft = {"architectures": ["PEagleDraftModel"]}
    assert infer_method("org/llama-head", draft, vllm_schema.knowledge_for(RELEASE)) == "peagle"
    # documented: the generated table has its row
    assert "| `peagle` | a P-EAGLE parallel draft head | 0.32, 0.33, 0.34 | a draft |" in _script().render()


def test_without_its_row_the_method_is_refused(models, tmp_path):
    """The harness above proves something: with the shipped table and snapshots, the same config is refused."""
    with pytest.raises(ConfigError, match="peagle"):
        _plan(models, tmp_path, {"method": "peagle", "num_speculative_tokens": 3}, "0.33.0")
