"""An engine is one package: every engine the registry names lives in engines/<name>/, implements engines.protocol's
Engine (every member present, each method with the protocol's parameters), imports no other engine, and plan/
imports none of them (only the protocol). The same environment planned with each engine agrees on what is not the
engine's to decide: the target, the method, the draft and its workspace path."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from core_fixtures import facts
from nim_specdec.engines.protocol import engine as protocol
from nim_specdec.engines.protocol.engine import Engine, Installation
from nim_specdec.engines.registry import ENGINES
from nim_specdec.launch.resolve import plan_for

SRC = Path(__file__).resolve().parents[2] / "src" / "nim_specdec"
ENGINES_DIR = SRC / "engines"
SHARED = ("protocol",)  # what every engine and the planner may import of engines/
MEMBERS = [name for name in dir(Engine) if not name.startswith("_")] + list(Engine.__annotations__)


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.update({node.module, *(f"{node.module}.{alias.name}" for alias in node.names)})
    return found


def _engines_named(path: Path) -> set[str]:
    """The engine packages (engines/<name>/, not the protocol) a module imports."""
    prefix = "nim_specdec.engines."
    named = {m[len(prefix) :].split(".")[0] for m in _imports(path) if m.startswith(prefix)}
    return {name for name in named if (ENGINES_DIR / name).is_dir() and name not in SHARED}


def _parameters(function) -> list[tuple[str, object, object, str]]:
    return [(p.name, p.kind, p.default, str(p.annotation)) for p in inspect.signature(function).parameters.values()]


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_each_engine_is_one_package_implementing_the_protocol(name):
    factory = ENGINES[name]
    assert factory.__module__ == f"nim_specdec.engines.{name}.engine"
    assert (ENGINES_DIR / name / "__init__.py").is_file()
    engine = factory(Installation(None, ""))
    assert isinstance(engine.name, str) and engine.name == name and isinstance(engine.title, str)
    for member in MEMBERS:
        assert hasattr(engine, member), f"{name} lacks {member}"
        wanted = inspect.getattr_static(Engine, member, None)
        if inspect.isfunction(wanted):
            got = inspect.getattr_static(type(engine), member)
            assert _parameters(got) == _parameters(wanted), f"{name}.{member}: not the protocol's parameters"
        elif isinstance(wanted, property):
            assert isinstance(inspect.getattr_static(type(engine), member), property), f"{name}.{member}"


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_no_engine_imports_another(name):
    for path in sorted((ENGINES_DIR / name).rglob("*.py")):
        assert _engines_named(path) <= {name}, f"{path.relative_to(SRC)} imports {_engines_named(path) - {name}}"


def test_the_planner_imports_no_engine():
    for path in sorted((SRC / "plan").rglob("*.py")):
        assert _engines_named(path) == set(), f"{path.relative_to(SRC)} imports {_engines_named(path)}"
        assert "nim_specdec.engines.registry" not in _imports(path)


def test_the_rules_see_a_crossing(tmp_path):
    crossing = tmp_path / "x.py"
    crossing.write_text("from nim_specdec.engines.vllm.argv import user_args\nimport nim_specdec.engines.protocol\n")
    assert _engines_named(crossing) == {"vllm"}
    assert "nim_specdec.engines.protocol" in _imports(crossing) and protocol.Engine is Engine


EAGLE3 = '{"method": "eagle3", "model": "eagle3_draft", "num_speculative_tokens": 3}'
SAME_ENVIRONMENTS = {
    "eagle3 draft": ({}, ["--speculative-config", EAGLE3]),
    "n-gram": ({}, ["--speculative-config", '{"method": "ngram", "num_speculative_tokens": 3}']),
    "auto choice": ({"NIM_SPECDEC_ENABLE": "1"}, []),
    "built-in": (
        {"NIM_SPECDEC_ENABLE": "1", "NIM_MODEL_NAME": "meta-llama/Llama-3.1-8B-Instruct", "NIM_MODEL_PATH": ""},
        [],
    ),
}


def _neutral(plan) -> dict:
    draft = plan.draft
    return {
        "target": (plan.target.model, plan.target.source, plan.target.chosen_by, plan.target.builtin),
        "method": (plan.speculative.enabled, plan.speculative.method, plan.speculative.reason),
        "config": dict(plan.speculative.config or {}),
        "draft": None if draft is None else (draft.name, draft.source, draft.path, draft.chosen_by),
        "workspace": plan.workspace,
    }


@pytest.mark.parametrize("case", sorted(SAME_ENVIRONMENTS))
def test_both_engines_agree_on_what_is_not_theirs(models, case):
    extra, args = SAME_ENVIRONMENTS[case]
    env = {
        "NIM_CACHE_PATH": str(models["cache"]),
        "NIM_MODEL_PATH": str(models["target"]),
        "NIM_DRAFT_MODEL_PATH": str(models["draft"]),
        **extra,
    }
    env = {k: v for k, v in env.items() if v}
    plans = {name: plan_for({**env, "NIM_ENGINE": name}, args, facts())[1] for name in sorted(ENGINES)}
    assert {name: plan.engine.name for name, plan in plans.items()} == {name: name for name in ENGINES}
    neutral = [_neutral(plan) for plan in plans.values()]
    assert all(view == neutral[0] for view in neutral), neutral
    assert len({plan.launch.argv[:3] for plan in plans.values()}) == len(plans)  # each engine's own command
