"""`nim-specdec plan [VLLM ARGS]`: print the resolved plan as JSON; nothing downloaded or started."""

from __future__ import annotations

import argparse
import json
import os
import sys

from nim_specdec.errors import MaterializeError
from nim_specdec.launch.facts import require_method_package
from nim_specdec.launch.logs import setup_logging
from nim_specdec.preflight import run_preflight
from nim_specdec.launch.resolve import public, resolve


def add_arguments(parser: argparse.ArgumentParser) -> None:  # arguments all belong to vLLM
    return None


def run(args: argparse.Namespace) -> int:
    env = dict(os.environ)
    settings, plan = resolve(env, args.vllm_args)
    if plan["speculative"]["enabled"]:
        try:
            require_method_package(plan["speculative"]["method"])
        except MaterializeError as err:  # serve would stop here; the plan says so
            plan["warnings"].append(f"serve would stop (exit 3): {err.one_line()}")
    log = setup_logging(settings.log_level, settings.jsonl_logging, env)
    for warning in plan["warnings"]:
        log.warning(warning)
    plan["preflight"] = run_preflight(plan, env, warn=log.warning)
    json.dump(public(plan, env), sys.stdout, indent=2, allow_nan=False)
    sys.stdout.write("\n")
    return 0
