"""The resolution shared by `plan`, `prepare` and `serve`: the planner's input + arguments -> Plan, no downloads.

The one place of the fixed point "facts about the sources -> plan": each pass of the plan's front
(plan/plan_front.py) names sources; those not known yet are looked up locally (or in the cache), and the
front is made again with them. The plan itself is built once, from the last front."""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any, Mapping, Sequence

from nim_specdec.config import variables as var
from nim_specdec.config.settings import Settings, parse_settings
from nim_specdec.fetchers.download.base import FetchContext
from nim_specdec.files.trust import refuse_system_dir
from nim_specdec.launch.facts import base_facts, source_facts, with_engine
from nim_specdec.launch.stage_inputs import facts_query, fetch_context, planner_input
from nim_specdec.plan.build import build_plan
from nim_specdec.plan.plan_facts import Facts
from nim_specdec.plan.plan_front import named_sources, plan_front
from nim_specdec.plan.plan_input import PlannerInput
from nim_specdec.plan.plan_model import Plan, plan_json
from nim_specdec.text.redact import redact_tree

# Facts can change the front (an auto choice reads the target's config.json, which may bring a
# draft); each pass can only add sources, so this settles in at most three.
MAX_PASSES = 3


def refuse_system_dirs(given: PlannerInput) -> None:
    """The cache, the workspace and the capture file's folder are created and re-moded by the launcher:
    never in a folder the system or other software owns (exit 2, naming the variable)."""
    refuse_system_dir(given.locations.cache_path, var.CACHE_PATH)
    refuse_system_dir(given.locations.workspace, var.WORKSPACE)
    if given.capture is not None:
        refuse_system_dir(os.path.dirname(given.capture.path) or "/", f"{var.CAPTURE_ARGS}.path")


def resolve(settings: Settings, cli_tokens: Sequence[str], facts: Facts | None = None) -> Plan:
    """The plan for these settings and vLLM arguments; `facts`: what is already known about the machine
    and the sources (read here when None). Sources not in `facts` are looked up locally or in the cache."""
    query = facts_query(settings)
    facts = with_engine(facts or base_facts(query), query)
    return resolve_with_facts(planner_input(settings), cli_tokens, facts, fetch_context(settings))[0]


def resolve_with_facts(
    given: PlannerInput, cli_tokens: Sequence[str], facts: Facts, ctx: FetchContext
) -> tuple[Plan, Facts]:
    """resolve, and the facts it ended with: those given and every source it looked up (in `ctx`'s cache,
    quietly: what a lookup has to say is a warning of the plan)."""
    refuse_system_dirs(given)
    facts = with_engine(facts)
    lookup = ctx.quiet()
    front = plan_front(given, cli_tokens, facts)
    warnings: tuple[str, ...] = ()
    for _ in range(MAX_PASSES):
        missing = [
            (ref, where)
            for ref, where in named_sources(front, given.speculation.draft_source)
            if ref.uri not in facts.sources
        ]
        if not missing:
            break
        found, noted = source_facts(missing, lookup)
        facts, warnings = replace(facts, sources={**facts.sources, **found}), warnings + noted
        front = plan_front(given, cli_tokens, facts)
    plan = build_plan(given, cli_tokens, facts, front)
    return replace(plan, warnings=plan.warnings + warnings), facts


def plan_for(env: Mapping[str, str], cli_tokens: Sequence[str], facts: Facts | None = None) -> tuple[Settings, Plan]:
    """The settings and plan a launcher started with `env` and `cli_tokens` would make: for tools that start
    launchers (the lab), whose environment is the one they will give that process, not their own."""
    settings = parse_settings(env)
    return settings, resolve(settings, cli_tokens, facts)


def public(plan: Plan, secrets: Sequence[str]) -> dict[str, Any]:
    """The plan as printed: plan_json (the one public view), with every secret masked (by key at any depth,
    by the value of any secret variable (`secrets`: config.host_env's), and inside URIs)."""
    return redact_tree(plan_json(plan), list(secrets))
