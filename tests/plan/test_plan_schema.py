"""`nim-specdec plan --schema` publishes the JSON Schema of the plan; the plans the CLI prints and the
saved guide plans match it (conftest checks every plan made in-process the same way)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from core_fixtures import make_models

GOLDEN = Path(__file__).parents[1] / "data" / "guide_plans.json"
PUBLIC_KEYS = {
    "mode",
    "target",
    "speculative",
    "draft",
    "engine_args",
    "engine_origin",
    "workspace",
    "cache_path",
    "compile_cache",
    "cpu_preload",
    "vllm_check",
    "model_runner",
    "engine",
    "argv",
    "env",
    "warnings",
    "capture",
    "preflight",
    "ignored_variables",
}


def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "nim_specdec", "plan", *args], capture_output=True, text=True, timeout=120, env=env
    )


@pytest.fixture(scope="module")
def schema() -> dict:
    done = cli("--schema")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_schema_is_a_valid_schema_of_every_public_key(schema):
    jsonschema.Draft202012Validator.check_schema(schema)
    assert set(schema["properties"]) == PUBLIC_KEYS == set(schema["required"])
    assert "argv_exec" not in json.dumps(schema) and "SourceRef" not in json.dumps(schema)
    # Which engine the plan is for, and the reason an engine other than vLLM leaves vLLM's compile cache unused.
    assert {"name", "release"} <= set(schema["$defs"]["EnginePlan"]["required"])
    assert "reason" in schema["$defs"]["CompileCachePlan"]["required"]


@pytest.mark.parametrize("name", sorted(json.loads(GOLDEN.read_text())))
def test_saved_guide_plans_match(schema, name):
    jsonschema.validate(json.loads(GOLDEN.read_text())[name], schema)


def test_printed_plan_matches_and_a_wrong_one_does_not(schema, tmp_path):
    models = make_models(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NIM_")}
    env.update(
        NIM_MODEL_PATH=str(models["target"]),
        NIM_DRAFT_MODEL_PATH=str(models["draft"]),
        NIM_CACHE_PATH=str(models["cache"]),
    )
    done = cli(
        "--speculative-config", '{"method": "eagle3", "model": "eagle3_draft", "num_speculative_tokens": 3}', env=env
    )
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    jsonschema.validate(plan, schema)
    broken = {**plan, "speculative": {**plan["speculative"], "enabled": "yes"}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)
