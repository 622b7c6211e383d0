"""The engine's own check of a plan's command, by the engine the plan is for. vLLM's (engines/vllm/check/gate.py)
runs as the commands call it; for SGLang it does not run (its section says so) and SGLang's own resolution runs
instead where SGLang is installed, each value it would change silently added to the plan's warnings
(engines/sglang/resolution.py). One child resolves every plan given: its imports cost seconds."""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Sequence

from nim_specdec.engines.protocol.sections import VllmCheckResult
from nim_specdec.plan.plan_model import Plan

NOT_FOR_SGLANG = VllmCheckResult(
    ran=False,
    skipped="not used by SGLang: SGLang's own resolution checks its command (the plan's warnings list what it "
    "would change)",
)


def checks_with_vllm(plan: Plan) -> bool:
    """Whether vLLM's own check is the plan's (a plan for another engine has that engine's)."""
    return plan.engine is None or plan.engine.name == "vllm"


def _local_files(plan: Plan) -> dict[str, str] | None:
    """Workspace path -> the directory its files are in now; None while the target's or the draft's are not here
    (the resolution reads their config.json, and must not download anything)."""
    local = {plan.target.model: plan.target.local_dir or plan.target.model}
    if plan.draft is not None:
        local[plan.draft.path] = plan.draft.local_dir or plan.draft.path
    return local if all(os.path.isdir(path) for path in local.values()) else None


def _named_as_planned(line: str, back: dict[str, str]) -> str:
    for local, path in back.items():
        line = line.replace(local, path)
    return line


def with_sglang_resolution(plans: Sequence[Plan], python: str | None) -> tuple[Plan, ...]:
    """Each plan for SGLang with its check section and, where SGLang is installed (`python`, None where it is not),
    the lines of SGLang's own resolution of its command in its warnings (ConfigError where SGLang refuses it)."""
    # SGLang's package is imported where a plan is for it: a vLLM start never loads it.
    from nim_specdec.engines.sglang.command import server_arguments  # noqa: PLC0415
    from nim_specdec.engines.sglang.resolution import resolution_lines, run_resolver, with_local_files  # noqa: PLC0415

    plans = tuple(replace(plan, vllm_check=NOT_FOR_SGLANG) for plan in plans)
    if python is None:
        note = "SGLang's own resolution did not run: SGLang is not installed here (set SGLANG_PYTHON to its python)"
        return tuple(replace(plan, warnings=(*plan.warnings, note)) for plan in plans)
    argvs: dict[int, tuple[str, ...]] = {}
    for i, plan in enumerate(plans):
        local = _local_files(plan)
        if local is not None:
            argvs[i] = with_local_files(server_arguments(plan.launch.argv), local)
    resolutions = dict(zip(argvs, run_resolver(python, list(argvs.values())), strict=True)) if argvs else {}
    out = []
    for i, plan in enumerate(plans):
        if i in resolutions:
            # The plan names the workspace paths the command gives SGLang, not the directories read in their place.
            back = {local: path for path, local in (_local_files(plan) or {}).items() if local != path}
            lines = tuple(_named_as_planned(line, back) for line in resolution_lines(argvs[i], resolutions[i]))
        else:
            lines = (
                "SGLang's own resolution did not run: it reads the target's and the draft's config.json, "
                "which are not here yet (prepare downloads them)",
            )
        out.append(replace(plan, warnings=(*plan.warnings, *lines)))
    return tuple(out)
