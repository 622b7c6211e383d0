"""The resolution shared by `plan` and `serve`: environment + arguments -> plan, no downloads."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping, Sequence

from nim_specdec.server.capture.capture_config import capture_middleware_args, parse_capture
from nim_specdec.launch.facts import base_facts, fetch_context, plan_sources, source_facts
from nim_specdec.config.plan import Facts, build_plan
from nim_specdec.config.settings import Settings, parse_settings
from nim_specdec.fetchers.trust import refuse_system_dir
from nim_specdec.fetchers.tuning import download_settings
from nim_specdec.launch.redact import redact_tree, secret_values

# Facts can change the plan (an auto choice reads the target's config.json, which may bring a
# draft); each pass can only add sources, so this settles in at most three.
MAX_PASSES = 3


def resolve(env: Mapping[str, str], cli_tokens: Sequence[str], facts: Facts | None = None) -> tuple[Settings, dict[str, Any]]:
    settings = parse_settings(env)
    refuse_system_dir(settings.cache_path, "NIM_CACHE_PATH")
    refuse_system_dir(settings.workspace, "NIM_WORKSPACE")
    download_settings(env)  # refused here, before anything is downloaded, as every other variable is
    capture = parse_capture(env)
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
    plan["warnings"] = plan["warnings"] + warnings
    plan["capture"] = None if capture is None else {
        "path": capture.path, "format": capture.format, "endpoint_pattern": capture.endpoint_pattern,
    }
    return settings, plan


def public(plan: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    """The plan as shown to people: internal keys (the unredacted argv) left out, and every secret masked
    (by key at any depth, by the value of any secret variable, and inside URIs)."""
    return redact_tree({k: v for k, v in plan.items() if not k.startswith("_")}, secret_values(env))
