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
import sys
from dataclasses import replace
from pathlib import Path
from typing import Mapping

from nim_specdec.config.capture_config import parse_capture
from nim_specdec.preflight.capture_path import check_writable
from nim_specdec.errors import MaterializeError
from nim_specdec.fetchers.cache import commit_of
from nim_specdec.launch.compile_cache_claim import claim
from nim_specdec.launch.facts import base_facts, fetch_context, read_config, require_method_package, vllm_flavor
from nim_specdec.common.logs import setup_logging
from nim_specdec.launch.workspace import fetch, link
from nim_specdec.config.plan_facts import SourceFacts
from nim_specdec.config.plan_model import Plan, check_view, plan_json
from nim_specdec.preflight import run_preflight
from nim_specdec.preflight.driver import check_driver
from nim_specdec.launch.resolve import resolve
from nim_specdec.launch.early_check import check_while_downloading, with_early_result
from nim_specdec.launch.vllm_boot import CONTEXT_VAR, boot_argv, check_context
from nim_specdec.launch.vllm_gate import check_in_server, run_check, settled
from nim_specdec.config.target import TARGET_LINK


def prepare(vllm_args: list[str], env: dict[str, str], *, for_serve: bool = False) -> tuple[Plan, logging.Logger]:
    """Resolve, check, download, re-check and link: everything serve does before it execs vLLM.
    Each step makes a new Plan; the sources travel typed from the resolution to the fetch.

    `for_serve`: vLLM will run in this Python, so the method's optional package must import here; and the
    vLLM check that nothing overlaps (no download runs meanwhile) is left to the exec'd process.
    """
    facts = base_facts(env)
    settings, plan = resolve(env, vllm_args, facts)
    if for_serve and plan.speculative.enabled:
        require_method_package(plan.speculative.method)
    log = setup_logging(settings.log_level, settings.jsonl_logging, env)
    for warning in plan.warnings:
        log.warning(warning)
    unwritable = check_writable(parse_capture(env))
    if unwritable:
        log.warning(unwritable)
        env["NIM_CAPTURE_ENABLE"] = "0"  # the server inherits env: capture stays off there too
        settings, plan = resolve(env, vllm_args, facts)
    # What is already local is checked before any download; what is downloaded, after it.
    plan = _checked(plan, env, log)
    # vLLM's own validation before anything slow: now when the target's and draft's files are here,
    # else as soon as they are fetched, before vLLM starts.
    plan = replace(plan, vllm_check=run_check(check_view(plan), env, warn=log.info, defer=for_serve))
    downloaded = False
    ctx = fetch_context(settings, env, log=log.info)
    workspace = Path(settings.workspace)
    early = None
    if not settled(plan.vllm_check):
        # Remote sources: their config.json first, then the check while the weights download.
        def replan(known):
            return resolve(env, vllm_args, replace(facts, sources={**facts.sources, **known}))[1]

        early = check_while_downloading(plan, env, ctx, replan, log.info)
        plan = with_early_result(plan, early)

    ref = plan.target.ref
    if ref is not None and not ref.is_local:
        local = fetch(ref, ctx)
        link(local, workspace / TARGET_LINK, ctx.cache_dir)
        downloaded = True
        if plan.target.local_dir != str(local):
            # Now the target's config.json is known (for a branch: that of the commit just fetched, which
            # may not be the one the plan saw cached): an auto choice may change (MTP heads).
            known = {
                **facts.sources,
                ref.uri: SourceFacts(str(local), read_config(local, plan.target.chosen_by), commit_of(local)),
            }
            settings, plan = resolve(env, vllm_args, replace(facts, sources=known))
        plan = plan.with_local_dirs(target_dir=str(local), target_commit=commit_of(local))

    log.info("speculative decoding: %s", plan.speculative.reason)
    draft = plan.draft
    if draft is not None:
        local = fetch(draft.ref, ctx)
        downloaded = downloaded or not draft.ref.is_local
        if draft.local_dir is not None and draft.local_dir != str(local):
            plan = replace(plan, vllm_check=None)  # it judged the commit cached before; this one is judged anew
        plan = plan.with_local_dirs(draft_dir=str(local), draft_commit=None if draft.ref.is_local else commit_of(local))
        if draft.name is not None:
            link(local, workspace / draft.name, ctx.cache_dir)
            log.info("draft %s materialized at %s", draft.source, draft.path)

    if downloaded:
        plan = _checked(plan, env, log)
    if early is not None and tuple(plan.argv_exec) == early.argv:
        plan = with_early_result(plan, early)  # the command judged during the download is the one that runs
    if not settled(plan.vllm_check):
        plan = replace(plan, vllm_check=run_check(check_view(plan), env, warn=log.warning, defer=for_serve))
    return plan, log


def _checked(plan: Plan, env: Mapping[str, str], log: logging.Logger) -> Plan:
    return replace(plan, preflight=run_preflight(plan_json(plan), env, warn=log.warning))


def run(args: argparse.Namespace) -> int:
    env = dict(os.environ)
    if vllm_flavor() is None:  # before any download: nothing could run what it fetched
        raise MaterializeError("vLLM", "is not installed", "pip install 'nim-specdec[gpu]' (or '[cpu]' without a GPU)")
    plan, log = prepare(args.vllm_args, env, for_serve=True)
    driver = check_driver(env)
    if driver:
        log.warning("pre-flight %s", driver)
    env.update(claim(plan.compile_cache, warn=log.warning, info=log.info))  # vLLM keeps the writer lock
    if plan.cpu_preload["LD_PRELOAD"]:
        env["LD_PRELOAD"] = plan.cpu_preload["LD_PRELOAD"]
    argv, shown = list(plan.argv_exec), list(plan.argv)
    if check_in_server(plan.vllm_check):  # deferred, or vLLM could not judge in this process
        argv, shown = boot_argv(sys.executable, argv), boot_argv(sys.executable, shown)
        env[CONTEXT_VAR] = check_context(check_view(plan))
    log.info("exec: %s", shlex.join(shown))
    os.execvpe(argv[0], argv, env)
    return 0  # not reached: exec replaced this process
