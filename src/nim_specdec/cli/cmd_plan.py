"""`nim-specdec plan [VLLM ARGS]`: print the resolved plan as JSON; nothing downloaded or started.

`nim-specdec plan --schema` prints the JSON Schema of that output instead.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import replace

from nim_specdec.config.plan_model import plan_json
from nim_specdec.errors import MaterializeError
from nim_specdec.launch.facts import require_method_package
from nim_specdec.launch.logs import setup_logging
from nim_specdec.preflight import run_preflight
from nim_specdec.launch.resolve import public, resolve

SCHEMA_FLAG = "--schema"


def run(args: argparse.Namespace) -> int:
    if args.vllm_args == [SCHEMA_FLAG]:  # vLLM has no --schema: alone, it is ours
        from nim_specdec.config.plan_model import plan_schema

        json.dump(plan_schema(), sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    env = dict(os.environ)
    settings, plan = resolve(env, args.vllm_args)
    if plan.speculative.enabled:
        try:
            require_method_package(plan.speculative.method)
        except MaterializeError as err:  # serve would stop here; the plan says so
            plan = replace(plan, warnings=(*plan.warnings, f"serve would stop (exit 3): {err.one_line()}"))
    log = setup_logging(settings.log_level, settings.jsonl_logging, env)
    for warning in plan.warnings:
        log.warning(warning)
    plan = replace(plan, preflight=run_preflight(plan_json(plan), env, warn=log.warning))
    json.dump(public(plan, env), sys.stdout, indent=2, allow_nan=False)
    sys.stdout.write("\n")
    return 0
