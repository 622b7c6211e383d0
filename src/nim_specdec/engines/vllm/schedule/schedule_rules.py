"""What vLLM does to a `num_speculative_tokens_per_batch_size` schedule beyond checking it: where it drops
the schedule without an error, and where it changes the engine to keep it.

From vllm/config/vllm.py (VllmConfig.__post_init__, in this order):
- `_maybe_disable_dynamic_sd_for_data_parallel` (0.32, 0.33): data parallelism above 1 sets the schedule to
  None with one warning line; every batch size then runs num_speculative_tokens.
- `_maybe_disable_dynamic_sd_for_v1` (0.33 only): on the V1 model runner, a method other than ngram, eagle,
  eagle3, mtp, draft_model and dflash loses the schedule the same way (V1 needs the proposer's support).
- `_maybe_override_dynamic_sd_cudagraph_mode` (0.32, 0.33): on V1, a CUDA graph mode with full graphs is
  downgraded to PIECEWISE (the verification length changes at run time); V2 keeps full graphs.
A dropped schedule is refused (the user asked for something vLLM would not do); the downgrade is a warning.
"""

from __future__ import annotations

from dataclasses import dataclass

from nim_specdec.engines.vllm.release.methods import names_where
from nim_specdec.engines.vllm.release.runner_choice import (
    ENV,
    FULL_CUDAGRAPH_MODES,
    rules_version,
    v2_refuses_method,
    version_key,
)

# The releases whose V1 runner keeps a schedule only for some methods (their rows' v1_schedule).
_V1_SCHEDULE_FILTERED = ((0, 33),)


@dataclass(frozen=True)
class ScheduleDrop:
    reason: str  # why vLLM would drop it, for the error line
    fix: str


def schedule_drop(vllm_version: str, runner: str, method: str | None, data_parallel_size: int) -> ScheduleDrop | None:
    """Would the serving engine drop this schedule? The reason and fix when it would, else None. For tune:
    a recommended schedule is only worth writing when this is None for the engine that will serve it."""
    version = rules_version(vllm_version)
    if data_parallel_size > 1:
        return ScheduleDrop(
            f"vLLM {version} drops the schedule with data parallelism above 1 (--data-parallel-size "
            f"{data_parallel_size}): data-parallel ranks could pick different K, so every batch size would run "
            "num_speculative_tokens",
            "remove num_speculative_tokens_per_batch_size, or serve with --data-parallel-size 1",
        )
    kept = names_where("v1_schedule") if version_key(version) in _V1_SCHEDULE_FILTERED else None
    if runner == "v1" and kept is not None and method not in kept:
        v2 = "" if v2_refuses_method(version, method) else f", or let V2 serve it (unset {ENV}=0 if it is set)"
        return ScheduleDrop(
            f"vLLM {version} drops the schedule of method {method!r} on the V1 model runner (only "
            f"{', '.join(kept)} keep one there), so every batch size would run num_speculative_tokens",
            f"remove num_speculative_tokens_per_batch_size or use one of those methods{v2}",
        )
    return None


def schedule_cudagraph_downgrade(runner: str, platform: str, cudagraph_mode: str) -> str | None:
    """ "FROM -> PIECEWISE" when vLLM downgrades CUDA graphs to keep a schedule, else None. The CPU build makes the
    same change in its config, then runs without CUDA graphs at all, so nothing changes there."""
    if runner != "v1" or platform == "cpu" or cudagraph_mode not in FULL_CUDAGRAPH_MODES:
        return None
    return f"{cudagraph_mode} -> PIECEWISE"


def downgrade_warning(downgrade: str) -> str:
    before = downgrade.split(" ", 1)[0]
    return (
        f"speculative_config.num_speculative_tokens_per_batch_size: on the V1 model runner vLLM runs CUDA graphs "
        f"PIECEWISE instead of {before} to keep the schedule (slower decode steps); "
        f"{ENV}=1 keeps full graphs where V2 supports the configuration"
    )
