"""The prepare pipeline's rule for building the plan again, and the typed values it hands on: a source whose
facts did not change keeps the plan (and its checks) as it is; one whose files now lie elsewhere (a branch
fetched at another commit) builds the plan again, with no stale pre-flight or vLLM-check result."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from dataclasses import replace

from nim_specdec.config.settings import parse_settings
from nim_specdec.engines.protocol.sections import VllmCheckResult
from nim_specdec.launch.pipeline import steps_for

EAGLE3 = '{"method": "eagle3", "model": "eagle3_draft", "num_speculative_tokens": 3}'


def _steps_and_state(models):
    env = {
        "NIM_MODEL_PATH": str(models["target"]),
        "NIM_DRAFT_MODEL_PATH": str(models["draft"]),
        "NIM_CACHE_PATH": str(models["cache"]),
    }
    steps = steps_for(parse_settings(env), logging.getLogger("test-pipeline"), for_serve=True)
    return steps, steps.resolve(["--speculative-config", EAGLE3])


def test_the_plan_is_kept_when_a_sources_facts_are_the_same(models):
    steps, state = _steps_and_state(models)
    draft = state.plan.draft
    assert draft is not None and draft.local_dir == str(models["draft"])
    checked = replace(state, plan=replace(state.plan, vllm_check=VllmCheckResult(ran=True)))
    assert steps.refine(checked, draft.ref, models["draft"], draft.chosen_by) is checked


def test_new_facts_build_the_plan_again_without_stale_checks(models, tmp_path):
    steps, state = _steps_and_state(models)
    draft = state.plan.draft
    moved = shutil.copytree(models["draft"], tmp_path / "elsewhere")
    checked = replace(state, plan=replace(state.plan, vllm_check=VllmCheckResult(ran=True)))
    refined = steps.refine(checked, draft.ref, moved, draft.chosen_by)
    assert refined is not checked
    assert refined.facts.sources[draft.ref.uri].local_dir == str(moved)
    assert refined.plan.draft.local_dir == str(moved)
    assert refined.plan.vllm_check is None and refined.plan.preflight is None


def test_the_plan_carries_what_is_execd(models):
    _, state = _steps_and_state(models)
    plan = state.plan
    launch = plan.launch
    assert str(models["target"]) in launch.argv
    spec = json.loads(launch.argv[launch.argv.index("--speculative-config") + 1])
    assert spec["model"] == plan.draft.path  # the bare name, rewritten to its workspace path
    preload = {"LD_PRELOAD": plan.cpu_preload.LD_PRELOAD} if plan.cpu_preload.LD_PRELOAD else {}
    assert launch.env == {**plan.compile_cache.env, **preload}


# Runs prepare in a Python of its own and reports, after it returned, whether vLLM was ever imported.
_PREPARE_AND_TELL = (
    "import sys; from nim_specdec.cli.main import main\n"
    "code = main(['prepare', '--speculative-config', sys.argv[1]])\n"
    "print('exit', code, 'vllm imported', 'vllm' in sys.modules)\n"
)


def _prepare_in_a_fresh_python(models, workspace):
    env = {
        **os.environ,
        "NIM_MODEL_PATH": str(models["target"]),
        "NIM_DRAFT_MODEL_PATH": str(models["draft"]),
        "NIM_CACHE_PATH": str(models["cache"]),
        "NIM_WORKSPACE": str(workspace),
    }
    return subprocess.run(
        [sys.executable, "-c", _PREPARE_AND_TELL, EAGLE3], env=env, capture_output=True, text=True, timeout=120
    )


def _spoil(workspace):
    """Another user's workspace where this test may make one (root), else one every user can write."""
    if os.geteuid() == 0:
        os.chown(workspace, 54321, 54321)
        return "uid 54321"
    os.chmod(workspace, 0o777)
    return "writable by every user"


def test_a_workspace_another_user_holds_is_refused_before_vllm_is_imported(models, tmp_path):
    """Cheap checks first: the workspace the draft is linked into is refused (exit 3, one line naming it) by
    a prepare that never imported vLLM, so never ran vLLM's check (seconds, and half a minute on two cores)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    fragment = _spoil(workspace)
    done = _prepare_in_a_fresh_python(models, workspace)
    assert done.stdout.strip().splitlines()[-1] == "exit 3 vllm imported False", (done.stdout, done.stderr)
    errors = [line for line in done.stderr.splitlines() if line.startswith("nim-specdec: error:")]
    assert len(errors) == 1 and "NIM_WORKSPACE" in errors[0] and str(workspace) in errors[0], done.stderr
    assert fragment in errors[0], errors[0]
    assert list(workspace.iterdir()) == []


def test_resolve_builds_the_plan_once_from_the_facts_it_gathered(models, monkeypatch):
    """The front names the sources and is made again once their facts are in; the plan itself is built once."""
    import nim_specdec.launch.resolve as resolve_module
    from nim_specdec.launch.facts import base_facts
    from nim_specdec.launch.stage_inputs import facts_query, fetch_context, planner_input

    calls = {"build_plan": 0, "plan_front": 0}
    for name in calls:
        original = getattr(resolve_module, name)

        def counted(*args, _original=original, _name=name, **kwargs):
            calls[_name] += 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(resolve_module, name, counted)
    env = {
        "NIM_MODEL_PATH": str(models["target"]),
        "NIM_DRAFT_MODEL_PATH": str(models["draft"]),
        "NIM_CACHE_PATH": str(models["cache"]),
    }
    settings = parse_settings(env)
    plan, facts = resolve_module.resolve_with_facts(
        planner_input(settings),
        ["--speculative-config", EAGLE3],
        base_facts(facts_query(settings)),
        fetch_context(settings),
    )
    assert calls == {"build_plan": 1, "plan_front": 2}
    assert set(facts.sources) == {str(models["target"]), str(models["draft"])}
    assert plan.target.local_dir == str(models["target"]) and plan.draft.local_dir == str(models["draft"])


def test_the_preflight_takes_the_configs_the_facts_step_read(models):
    from nim_specdec.preflight.shell import preflight_inputs

    _, state = _steps_and_state(models)
    inputs = preflight_inputs(state.plan, state.facts.sources)
    assert inputs.target_config is state.facts.sources[str(models["target"])].config
    assert inputs.draft_config is state.facts.sources[str(models["draft"])].config
    moved = replace(state.plan, target=replace(state.plan.target, local_dir="/elsewhere"))
    assert preflight_inputs(moved, state.facts.sources).target_config is None  # files elsewhere: read there


def test_what_stands_where_the_draft_is_linked_is_refused_before_vllm_is_imported(models, tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir(mode=0o700)
    (workspace / "eagle3_draft").mkdir()  # a folder, not a link of ours: never replaced
    done = _prepare_in_a_fresh_python(models, workspace)
    assert done.stdout.strip().splitlines()[-1] == "exit 3 vllm imported False", (done.stdout, done.stderr)
    errors = [line for line in done.stderr.splitlines() if line.startswith("nim-specdec: error:")]
    assert len(errors) == 1 and str(workspace / "eagle3_draft") in errors[0] and "not a link" in errors[0], errors
    assert (workspace / "eagle3_draft").is_dir() and not (workspace / "eagle3_draft").is_symlink()
