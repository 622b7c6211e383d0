"""The resolution shared by `plan`, `prepare` and `serve`: settings + arguments -> Plan, no downloads.

The one place of the fixed point "facts about the sources -> plan": each pass of the plan's front
(plan/plan_front.py) names sources; those not known yet are looked up locally (or in the cache), and the
front is made again with them. The plan itself is built once, from the last front."""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any, Mapping, Sequence

from nim_specdec.config import variables as var
from nim_specdec.text.redact import redact_tree
from nim_specdec.files.trust import refuse_system_dir
from nim_specdec.plan.build import build_plan
from nim_specdec.plan.plan_facts import Facts
from nim_specdec.plan.plan_front import named_sources, plan_front
from nim_specdec.plan.plan_model import Plan, plan_json
from nim_specdec.config.settings import Settings, parse_settings
from nim_specdec.fetchers.context import fetch_context
from nim_specdec.launch.facts import base_facts, source_facts

# Facts can change the front (an auto choice reads the target's config.json, which may bring a
# draft); each pass can only add sources, so this settles in at most three.
MAX_PASSES = 3


def refuse_system_dirs(settings: Settings) -> None:
    """The cache, the workspace and the capture file's folder are created and re-moded by the launcher:
    never in a folder the system or other software owns (exit 2, naming the variable)."""
    refuse_system_dir(settings.cache_path, var.CACHE_PATH)
    refuse_system_dir(settings.workspace, var.WORKSPACE)
    if settings.capture is not None:
        refuse_system_dir(os.path.dirname(settings.capture.path) or "/", f"{var.CAPTURE_ARGS}.path")


def resolve(settings: Settings, cli_tokens: Sequence[str], facts: Facts | None = None) -> Plan:
    """The plan for these settings and vLLM arguments; `facts`: what is already known about the machine
    and the sources (read here when None). Sources not in `facts` are looked up locally or in the cache."""
    return resolve_with_facts(settings, cli_tokens, facts or base_facts(settings))[0]


def resolve_with_facts(settings: Settings, cli_tokens: Sequence[str], facts: Facts) -> tuple[Plan, Facts]:
    """resolve, and the facts it ended with: those given and every source it looked up."""
    refuse_system_dirs(settings)
    ctx = fetch_context(settings)
    front = plan_front(settings, cli_tokens, facts)
    warnings: tuple[str, ...] = ()
    for _ in range(MAX_PASSES):
        missing = [(ref, where) for ref, where in named_sources(front, settings) if ref.uri not in facts.sources]
        if not missing:
            break
        found, noted = source_facts(missing, ctx)
        facts, warnings = replace(facts, sources={**facts.sources, **found}), warnings + noted
        front = plan_front(settings, cli_tokens, facts)
    plan = build_plan(settings, cli_tokens, facts, front)
    return replace(plan, warnings=plan.warnings + warnings), facts


def plan_for(env: Mapping[str, str], cli_tokens: Sequence[str], facts: Facts | None = None) -> tuple[Settings, Plan]:
    """The settings and plan a launcher started with `env` and `cli_tokens` would make: for tools that start
    launchers (the lab), whose environment is the one they will give that process, not their own."""
    settings = parse_settings(env)
    return settings, resolve(settings, cli_tokens, facts)


def public(plan: Plan, secrets: Sequence[str]) -> dict[str, Any]:
    """The plan as printed: plan_json (the one public view), with every secret masked (by key at any depth,
    by the value of any secret variable (`secrets`: Settings.host.secrets), and inside URIs)."""
    return redact_tree(plan_json(plan), list(secrets))
