"""Which model is served when several are named: the precedence, and one warning for each model variable that
is set but does not serve (NIM_MODEL_NAME beside NIM_MODEL_PATH used to be dropped without a word)."""

from __future__ import annotations

import pytest

from core_fixtures import REGISTRY, facts, make_models
from nim_specdec.config.sources import parse_source
from nim_specdec.launch.resolve import plan_for
from nim_specdec.plan.method.target import resolve_target, unused_model_variables
from nim_specdec.plan.plan_model import plan_json

PATH = parse_source("/models/mine", "NIM_MODEL_PATH")
NAME = "meta/llama-3.1-8b-instruct"
CLI = ("/models/cli", "--model")


@pytest.mark.parametrize(
    "cli, source, name, serving, ignored",
    [
        (None, PATH, None, "NIM_MODEL_PATH", []),
        (None, None, NAME, "NIM_MODEL_NAME", []),
        (None, PATH, NAME, "NIM_MODEL_PATH", ["NIM_MODEL_NAME"]),
        (CLI, PATH, None, "--model", ["NIM_MODEL_PATH"]),
        (CLI, PATH, NAME, "--model", ["NIM_MODEL_PATH", "NIM_MODEL_NAME"]),
        (CLI, None, None, "--model", []),
    ],
)
def test_every_model_variable_that_does_not_serve_is_named_once(cli, source, name, serving, ignored):
    target = resolve_target(cli, None, source, name, REGISTRY)
    assert target.where == serving
    warnings = unused_model_variables(target, source, name)
    assert [w.split(" ", 1)[0] for w in warnings] == ignored
    for warning in warnings:
        assert f"{serving} chooses the model served ({target.model_arg})" in warning
        assert "NIM_MODEL_PATH > NIM_MODEL_NAME" in warning


def test_the_plan_carries_the_warning_once(tmp_path):
    models = make_models(tmp_path)
    env = {"NIM_CACHE_PATH": str(models["cache"]), "NIM_MODEL_PATH": str(models["target"]), "NIM_MODEL_NAME": NAME}
    shown = plan_json(plan_for(env, [], facts())[1])
    assert [w for w in shown["warnings"] if w.startswith("NIM_MODEL_NAME is ignored")] == [
        f"NIM_MODEL_NAME is ignored: NIM_MODEL_PATH chooses the model served ({models['target']}); the precedence is "
        "--model > NIM_PASSTHROUGH_ARGS > NIM_MODEL_PATH > NIM_MODEL_NAME; unset NIM_MODEL_NAME to silence this"
    ]
