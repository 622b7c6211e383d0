"""`serve`'s last step: the plan becomes what is exec'd, and the exec reads nothing else.

The hand-off claims the compile cache (which may move it to a local copy), warns about an old GPU driver, and,
where vLLM's check is left to the server's process, wraps vLLM's command in vllm_boot with the check's context.
Each of those lands in the plan's `launch` value; `exec_plan` then runs exactly that, with the environment the
launcher inherited plus the launch's variables.
"""

from __future__ import annotations

import logging
import os
import shlex
import sys
from dataclasses import replace
from typing import Mapping

from nim_specdec.config.settings import LogFormat
from nim_specdec.engines.vllm.boot.vllm_boot import CONTEXT_VAR, boot_argv, check_context
from nim_specdec.launch.check_request import check_request
from nim_specdec.launch.compile_cache.claim import claim
from nim_specdec.plan.plan_model import Plan
from nim_specdec.plan.plan_sections import Launch
from nim_specdec.preflight.driver import check_driver


def hand_off(
    plan: Plan, log: logging.Logger, log_format: LogFormat, cuda_version: str | None, vouched: str | None
) -> Plan:
    """The plan with its final `launch` (and the argv it shows, masked, to match). `cuda_version`: the image's
    CUDA_VERSION (the driver is checked against it); `vouched`: the cache folder the platform vouches for
    (NIM_CACHE_TRUST_SHARED), or None; `log_format`: how vLLM's check logs when the server's process runs it."""
    driver = check_driver(cuda_version)
    if driver:
        log.warning("pre-flight %s", driver)
    claimed = claim(plan.compile_cache, warn=log.warning, info=log.info, vouched=vouched)
    launch = plan.launch.with_env(claimed)  # vLLM keeps the lock
    shown = plan.argv
    if plan.vllm_check is not None and plan.vllm_check.in_server:  # deferred, or vLLM could not judge here
        context = check_context(check_request(plan), log_format.level, log_format.jsonl)
        launch = Launch(tuple(boot_argv(sys.executable, launch.argv)), {**launch.env, CONTEXT_VAR: context})
        shown = tuple(boot_argv(sys.executable, shown))
    return replace(plan, launch=launch, argv=shown)


def exec_plan(plan: Plan, inherited: Mapping[str, str], log: logging.Logger) -> None:
    """Become vLLM: the plan's command, with `inherited` (the launcher's environment) and the launch's variables."""
    log.info("exec: %s", shlex.join(plan.argv))
    argv = list(plan.launch.argv)
    os.execvpe(argv[0], argv, {**inherited, **plan.launch.env})
