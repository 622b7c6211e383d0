"""`nim-specdec plan [--check-vllm] [VLLM ARGS]`: print the resolved plan as JSON; nothing downloaded or
started. With --check-vllm the final command line also goes through the installed vLLM's own validation
(seconds: it imports vLLM), as `serve` does before it starts anything slow. `nim-specdec plan --schema`
prints the JSON Schema of the plan instead."""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import replace

from nim_specdec.config import variables as var
from nim_specdec.config.settings import parse_settings
from nim_specdec.engines.vllm.release.vllm_schema import knowledge_for
from nim_specdec.errors import MaterializeError
from nim_specdec.launch.custom_method import custom_method_note, require_custom_method
from nim_specdec.launch.engine_check import checks_with_vllm, with_sglang_resolution
from nim_specdec.launch.facts import base_facts, require_method_package
from nim_specdec.launch.resolve import public, resolve_with_facts
from nim_specdec.launch.stage_inputs import facts_query, fetch_context, planner_input
from nim_specdec.plan.plan_model import plan_schema
from nim_specdec.preflight.shell import with_preflight
from nim_specdec.text.logs import setup_logging

SCHEMA_FLAG = "--schema"


CHECK_FLAG = "--check-vllm"  # vLLM has no such option, so it can lead the vLLM arguments


def run(args: argparse.Namespace) -> int:
    if args.vllm_args == [SCHEMA_FLAG]:  # vLLM has no --schema: alone, it is ours
        json.dump(plan_schema(), sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    settings = parse_settings(os.environ)
    vllm_args = list(args.vllm_args)
    check = vllm_args[:1] == [CHECK_FLAG]
    if check:
        vllm_args = vllm_args[1:]
    facts = base_facts(facts_query(settings), for_plan=True)
    plan, facts = resolve_with_facts(planner_input(settings), vllm_args, facts, fetch_context(settings))
    if plan.speculative.enabled:
        try:
            require_method_package(plan.speculative.method, vllm_version=facts.vllm_version)
        except MaterializeError as err:  # serve would stop here; the plan says so
            plan = replace(plan, warnings=(*plan.warnings, f"serve would stop (exit 3): {err.one_line()}"))
    # a custom method's plugin is looked for where the plan is made; prepare and serve refuse without one
    plugins = require_custom_method(
        plan.speculative.custom_method, os.environ, facts.vllm_version, knowledge_for(facts.vllm_version).methods
    )
    if plugins:
        plan = replace(plan, warnings=(*plan.warnings, custom_method_note(plan.speculative.custom_method, plugins)))
    if not checks_with_vllm(plan):  # SGLang's own resolution instead of vLLM's check
        installed = facts.the_engine().installation
        plan = with_sglang_resolution([plan], installed.python if installed.flavor else None)[0]
    log = setup_logging(settings.log_level, settings.jsonl_logging, settings.host.secrets)
    if settings.plan_vllm_version is not None:
        known = knowledge_for(facts.vllm_version)
        log.info(
            f"planning for vLLM {known.version} ({var.PLAN_VLLM_VERSION}) on {facts.platform}: snapshot "
            f"vllm_schemas/{known.snapshot}.json" + ("" if known.exact else " (the newest known; no exact snapshot)")
        )
    for warning in plan.warnings:
        log.warning(warning)
    plan = with_preflight(plan, settings.preflight, settings.host.cuda_visible_devices, log.warning, facts.sources)
    if check and checks_with_vllm(plan):
        from nim_specdec.engines.vllm.check.gate import run_check  # noqa: PLC0415 - --check-vllm only: +2 modules, ~5 ms a plan
        from nim_specdec.launch.check_request import check_request  # noqa: PLC0415 - --check-vllm only: +2 modules

        plan = replace(plan, vllm_check=run_check(check_request(plan), settings.host.secrets, warn=log.warning))
    json.dump(public(plan, settings.host.secrets), sys.stdout, indent=2, allow_nan=False)
    sys.stdout.write("\n")
    return 0
