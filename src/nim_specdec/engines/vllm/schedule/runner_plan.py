"""The plan's `model_runner`: which runner vLLM will serve with, and what that does to a batch-size schedule.

Pure: the platform and VLLM_USE_V2_MODEL_RUNNER arrive parsed (Facts, PlannerInput); the engine arguments and the
speculative config are the plan's resolved ones.
"""

from __future__ import annotations

from typing import Any, Mapping

from nim_specdec.engines.protocol.sections import ModelRunnerPlan
from nim_specdec.engines.vllm.release.runner_choice import choose_model_runner, runner_inputs
from nim_specdec.engines.vllm.schedule.schedule_rules import (
    downgrade_warning,
    schedule_cudagraph_downgrade,
    schedule_drop,
)
from nim_specdec.engines.vllm.schedule.spec_schedule import KEY as SCHEDULE_KEY
from nim_specdec.errors import ConfigError


def plan_model_runner(
    vllm_version: str,
    platform: str,
    use_v2: bool | None,
    view: Mapping[str, Any],
    spec: Mapping[str, Any] | None,
    method: str | None,
    spec_origin: Mapping[str, str],
) -> tuple[ModelRunnerPlan, tuple[str, ...]]:
    """The runner and the schedule's fate, and the warnings; ConfigError (exit 2) where vLLM would refuse the
    runner or drop the schedule silently; a warning line where it keeps the schedule at the cost of full CUDA
    graphs."""
    inputs = runner_inputs(view, spec, method)
    choice = choose_model_runner(vllm_version, platform, inputs, use_v2)
    downgrade, warnings = None, ()
    if inputs.schedule:
        drop = schedule_drop(choice.vllm_version, choice.runner, inputs.method, inputs.data_parallel)
        if drop is not None:
            where = f"speculative_config.{SCHEDULE_KEY} (from {spec_origin.get(SCHEDULE_KEY, 'the config')})"
            raise ConfigError(where, drop.reason, drop.fix)
        downgrade = schedule_cudagraph_downgrade(choice.runner, choice.platform, inputs.cudagraph_mode)
        if downgrade is not None:
            warnings = (downgrade_warning(downgrade),)
    return ModelRunnerPlan(choice.runner, choice.reason, choice.platform, choice.vllm_version, downgrade), warnings
