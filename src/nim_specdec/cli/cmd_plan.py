"""`nim-specdec plan [--check-vllm] [VLLM ARGS]`: print the resolved plan as JSON; nothing downloaded or
started. With --check-vllm the final command line also goes through the installed vLLM's own validation
(seconds: it imports vLLM), as `serve` does before it starts anything slow."""

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


CHECK_FLAG = "--check-vllm"  # vLLM has no such option, so it can lead the vLLM arguments


def run(args: argparse.Namespace) -> int:
    env = dict(os.environ)
    vllm_args = list(args.vllm_args)
    check = vllm_args[:1] == [CHECK_FLAG]
    if check:
        vllm_args = vllm_args[1:]
    settings, plan = resolve(env, vllm_args)
    if plan["speculative"]["enabled"]:
        try:
            require_method_package(plan["speculative"]["method"])
        except MaterializeError as err:  # serve would stop here; the plan says so
            plan["warnings"].append(f"serve would stop (exit 3): {err.one_line()}")
    log = setup_logging(settings.log_level, settings.jsonl_logging, env)
    for warning in plan["warnings"]:
        log.warning(warning)
    plan["preflight"] = run_preflight(plan, env, warn=log.warning)
    if check:
        from nim_specdec.launch.vllm_gate import run_check  # noqa: PLC0415 - imports vLLM: seconds

        plan["vllm_check"] = run_check(plan, env, warn=log.warning)
    json.dump(public(plan, env), sys.stdout, indent=2, allow_nan=False)
    sys.stdout.write("\n")
    return 0
