"""The resolution shared by `plan`, `prepare` and `serve`: environment + arguments -> Plan, no downloads.

The one place of the fixed point "facts about the sources -> plan": each pass looks up what the plan's
typed sources hold locally (or in the cache) and builds the plan again with those facts."""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any, Mapping, Sequence

from nim_specdec.config.capture_config import capture_middleware_args, parse_capture
from nim_specdec.launch.facts import base_facts, fetch_context, plan_sources, source_facts
from nim_specdec.config.plan import build_plan
from nim_specdec.config.plan_facts import Facts
from nim_specdec.config.plan_model import CapturePlan, Plan, plan_json
from nim_specdec.config.settings import Settings, parse_settings
from nim_specdec.common.trust import refuse_system_dir
from nim_specdec.common.redact import redact_tree, secret_values

# Facts can change the plan (an auto choice reads the target's config.json, which may bring a
# draft); each pass can only add sources, so this settles in at most three.
MAX_PASSES = 3


def resolve(env: Mapping[str, str], cli_tokens: Sequence[str], facts: Facts | None = None) -> tuple[Settings, Plan]:
    settings = parse_settings(env)
    refuse_system_dir(settings.cache_path, "NIM_CACHE_PATH")
    refuse_system_dir(settings.workspace, "NIM_WORKSPACE")
    capture = parse_capture(env)
    if capture is not None:  # the capture file is created, and its folder re-moded, as the cache's are
        refuse_system_dir(os.path.dirname(capture.path) or "/", "NIM_CAPTURE_ARGS.path")
    facts = facts or base_facts(env)
    facts = replace(facts, extra_middlewares=tuple(capture_middleware_args(capture)[1::2]))
    ctx = fetch_context(settings, env)
    plan = build_plan(settings, env, cli_tokens, facts)
    warnings: list[str] = []
    for _ in range(MAX_PASSES):
        refs = plan_sources(plan, settings)
        missing = [(ref, where) for ref, where in refs if ref.uri not in facts.sources]
        if not missing:
            break
        facts = replace(facts, sources={**facts.sources, **source_facts(missing, ctx, warnings)})
        plan = build_plan(settings, env, cli_tokens, facts)
    return settings, replace(
        plan,
        warnings=plan.warnings + tuple(warnings),
        capture=None if capture is None else CapturePlan(capture.path, capture.format, capture.endpoint_pattern),
    )


def public(plan: Plan, env: Mapping[str, str]) -> dict[str, Any]:
    """The plan as printed: plan_json (the one public view), with every secret masked (by key at any depth,
    by the value of any secret variable, and inside URIs)."""
    return redact_tree(plan_json(plan), secret_values(env))
