"""`nim-specdec serve [VLLM ARGS]`: the container entrypoint.

Validate everything first (milliseconds), then download, then exec the vLLM server so that it
becomes this process: no wrapper stays, and SIGTERM from Docker or Kubernetes reaches vLLM.
`prepare` is the same without the exec (init containers, multi-node workers).
"""

from __future__ import annotations

import argparse
import logging
import os
import shlex
from dataclasses import replace
from pathlib import Path

from nim_specdec.server.capture.capture_config import parse_capture
from nim_specdec.preflight.capture_path import check_writable
from nim_specdec.errors import MaterializeError
from nim_specdec.launch.compile_cache import claim
from nim_specdec.launch.facts import base_facts, fetch_context, read_config, require_method_package, vllm_flavor
from nim_specdec.launch.logs import setup_logging
from nim_specdec.launch.workspace import fetch, link
from nim_specdec.config.plan import SourceFacts
from nim_specdec.preflight import run_preflight
from nim_specdec.launch.resolve import resolve
from nim_specdec.launch.vllm_gate import run_check
from nim_specdec.config.sources import parse_source
from nim_specdec.config.target import TARGET_LINK


def add_arguments(parser: argparse.ArgumentParser) -> None:  # arguments all belong to vLLM
    return None


def prepare(vllm_args: list[str], env: dict[str, str], *, for_serve: bool = False) -> tuple[dict, logging.Logger]:
    """Resolve, check, download and link: everything serve does before it execs vLLM.

    `for_serve`: vLLM will run in this Python, so the method's optional package must import here.
    """
    facts = base_facts(env)
    settings, plan = resolve(env, vllm_args, facts)
    if for_serve and plan["speculative"]["enabled"]:
        require_method_package(plan["speculative"]["method"])
    log = setup_logging(settings.log_level, settings.jsonl_logging, env)
    for warning in plan["warnings"]:
        log.warning(warning)
    unwritable = check_writable(parse_capture(env))
    if unwritable:
        log.warning(unwritable)
        env["NIM_CAPTURE_ENABLE"] = "0"  # the server inherits env: capture stays off there too
        settings, plan = resolve(env, vllm_args, facts)
    # What is already local is checked before any download; what is downloaded, after it.
    plan["preflight"] = run_preflight(plan, env, warn=log.warning)
    # vLLM's own validation before anything slow: now when the target's and draft's files are here,
    # else as soon as they are fetched, before vLLM starts.
    plan["vllm_check"] = run_check(plan, env, warn=log.info)
    downloaded = False
    ctx = fetch_context(settings, env, log=log.info)
    workspace = Path(settings.workspace)

    target = plan["target"]
    if "://" in target["source"]:
        ref = parse_source(target["source"], target["chosen_by"])
        local = fetch(ref, ctx)
        link(local, workspace / TARGET_LINK, ctx.cache_dir)
        downloaded = True
        if target["local_dir"] is None:
            # Now the target's config.json is known: an auto choice may change (MTP heads).
            known = {**facts.sources, ref.uri: SourceFacts(str(local), read_config(local, target["chosen_by"]))}
            settings, plan = resolve(env, vllm_args, replace(facts, sources=known))
        plan["target"]["local_dir"] = str(local)

    log.info("speculative decoding: %s", plan["speculative"]["reason"])
    draft = plan["draft"]
    if draft is not None:
        ref = parse_source(draft["source"], draft["chosen_by"])
        local = fetch(ref, ctx)
        downloaded = downloaded or not ref.is_local
        draft["local_dir"] = str(local)
        if draft["name"] is not None:
            link(local, workspace / draft["name"], ctx.cache_dir)
            log.info("draft %s materialized at %s", draft["source"], draft["path"])

    if downloaded:
        plan["preflight"] = run_preflight(plan, env, warn=log.warning)
    if not (plan.get("vllm_check") or {}).get("ran"):
        plan["vllm_check"] = run_check(plan, env, warn=log.warning)
    return plan, log


def run(args: argparse.Namespace) -> int:
    env = dict(os.environ)
    if vllm_flavor() is None:  # before any download: nothing could run what it fetched
        raise MaterializeError("vLLM", "is not installed", "pip install 'nim-specdec[gpu]' (or '[cpu]' without a GPU)")
    plan, log = prepare(args.vllm_args, env, for_serve=True)
    env.update(claim(plan["compile_cache"], warn=log.warning, info=log.info))  # vLLM keeps the writer lock
    if plan["cpu_preload"]["LD_PRELOAD"]:
        env["LD_PRELOAD"] = plan["cpu_preload"]["LD_PRELOAD"]
    argv = plan["_argv_exec"]
    log.info("exec: %s", shlex.join(plan["argv"]))
    os.execvpe(argv[0], argv, env)
    return 0  # not reached: exec replaced this process
