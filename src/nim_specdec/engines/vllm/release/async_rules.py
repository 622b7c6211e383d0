"""Async scheduling asked on (`--async-scheduling`) where vLLM refuses to start, by release and model runner.

VllmConfig.__post_init__ (vllm/config/vllm.py) settles async scheduling before the platform's hook:
- 0.32 refuses it, on either runner, with a speculative method whose row does not keep it (methods.py) or with
  `disable_padded_drafter_batch`; with pipeline parallelism the V1 runner's own check refuses it
  (`_get_v1_model_runner_unsupported_features`), which runs after the CPU platform has turned async
  scheduling off, so not on the CPU build.
- 0.33 refuses the same three on the V1 runner only (`v1_async_sched_incompat`), before any platform hook.
- 0.34 has no V1 runner and no speculative condition: async scheduling is on unless the model pools, the
  executor cannot, or ROCm DeepEP high-throughput DBO runs (tests/lab/tune/engines/test_async_rule_vllm.py runs
  its block).
Left to the vLLM check: an executor without async support (`supports_async_scheduling`), ROCm DeepEP
high-throughput DBO.
"""

from __future__ import annotations

from nim_specdec.engines.vllm.release.methods import method_row


def keeps_async(method: str | None) -> bool:
    """The method's row says so; an MTP type's own name (deepseek_mtp, ...) is MTP's."""
    row = method_row(method)
    return method is None or (row is not None and row.keeps_async) or method.endswith("mtp")


def async_refusal(
    release: tuple[int, int], platform: str, runner: str, method: str | None, padded_off: bool, pipeline_parallel: int
) -> str | None:
    """Why vLLM `release` refuses async scheduling asked on, in its words, or None where it starts."""
    v1_only = release >= (0, 33)
    if runner == "v1" or not v1_only:
        if not keeps_async(method):
            return f"async scheduling with '{method}' speculative decoding"
        if method is not None and padded_off:
            return "async scheduling with disable_padded_drafter_batch=True"
    if runner == "v1" and pipeline_parallel > 1 and (v1_only or platform != "cpu"):
        return "pipeline parallelism with async scheduling on the V1 model runner"
    return None
