"""GPU memory the plan needs, estimated from configs and weight headers, against what the GPU offers.

Pure. Figures are per GPU of the last pipeline stage (tensor x pipeline parallelism split the target; the
draft sits on that stage only). The model follows how vLLM 0.32 spends `total x gpu_memory_utilization` on each GPU:
weights first, then the peak activations of a profiling step, and the rest becomes one
block pool of KV cache shared by the target's and the draft's attention layers. So a
draft costs (1) its weights, (2) KV bytes on every cached token, and (3) activations to
verify k more tokens per sequence: the target's float32 logits and probabilities for those
positions, and the draft's own. vLLM refuses to start unless the pool holds at least one
sequence of `max_model_len` tokens; that is the line between fit and no fit here.

The draft's KV cache for `max_model_len x max_num_seqs` tokens is reported as a figure,
not required: the pool is shared and paged, and vLLM's defaults (1024 sequences of the
full context) are never all resident at once, so demanding them would refuse every plan.

Left out: the target's own activation peak and CUDA graphs, which only vLLM's profiling of
the loaded model measures. The estimate is therefore a lower bound, one more reason the
memory check warns by default instead of refusing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from nim_specdec.engines.vllm.release.methods import method_row
from nim_specdec.preflight import model_config as mc
from nim_specdec.preflight.results import FAIL, Check, passed, skipped

GIB = 1024**3
NAME = "memory.headroom"
# vLLM 0.32 defaults (config/cache.py, engine/arg_utils.py get_batch_defaults for the API server).
DEFAULT_GPU_MEMORY_UTILIZATION = 0.92
LOGIT_BYTES = 4  # vLLM samples and verifies in float32


@dataclass(frozen=True)
class Gpu:
    total: int
    used: int
    name: str


@dataclass(frozen=True)
class MemoryInputs:
    method: str
    spec_config: Mapping[str, Any]
    engine_args: Mapping[str, Any]
    target: mc.Config | None
    target_weight_bytes: int | None
    draft: mc.Config | None
    draft_weight_bytes: int | None
    mtp_heads: int | None  # the target's MTP head count when the method is mtp
    gpus: tuple[Gpu, ...] | None  # None: no GPU could be read


def default_max_num_seqs(gpu: Gpu | None) -> int:
    """vLLM's API-server default, which depends on the GPU it finds."""
    if gpu is not None and (gpu.total >= 160 * GIB or (gpu.total >= 70 * GIB and "a100" not in gpu.name.lower())):
        return 1024
    return 256


def parse_length(value: Any) -> int | None:
    """max_model_len as vLLM accepts it: 4096, "32k" (x1000), "32K" (x1024); -1 and "auto" mean derived."""
    text = str(value).strip()
    if text in ("-1", "auto", "None", ""):
        return None
    units = {"k": 10**3, "m": 10**6, "g": 10**9, "K": 2**10, "M": 2**20, "G": 2**30}
    if text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(float(text))


def _gib(n: float) -> str:
    return f"{n / GIB:.1f} GiB"


def _resolved(inputs: MemoryInputs) -> dict[str, Any]:
    args, target = inputs.engine_args, inputs.target or {}
    first_gpu = inputs.gpus[0] if inputs.gpus else None
    max_len = parse_length(args.get("max_model_len")) if args.get("max_model_len") is not None else None
    k = inputs.spec_config.get("num_speculative_tokens")
    return {
        "max_model_len": max_len or mc.derived_max_model_len(target) or 0,
        "max_num_seqs": int(args.get("max_num_seqs") or default_max_num_seqs(first_gpu)),
        "gpu_memory_utilization": float(args.get("gpu_memory_utilization") or DEFAULT_GPU_MEMORY_UTILIZATION),
        "tensor_parallel_size": int(args.get("tensor_parallel_size") or 1),
        "pipeline_parallel_size": int(args.get("pipeline_parallel_size") or 1),
        "num_speculative_tokens": int(k if k is not None else (inputs.mtp_heads or 1)),
        # vLLM accepts 1 or the target's size here; unset, the draft is split like the target.
        "draft_tensor_parallel_size": int(
            inputs.spec_config.get("draft_tensor_parallel_size") or args.get("tensor_parallel_size") or 1
        ),
    }


def estimate(inputs: MemoryInputs) -> dict[str, Any]:
    """Per-GPU figures in bytes: what the draft adds and what the whole plan needs."""
    r = _resolved(inputs)
    tp, seqs, length, k = r["tensor_parallel_size"], r["max_num_seqs"], r["max_model_len"], r["num_speculative_tokens"]
    pp = r["pipeline_parallel_size"]
    target = inputs.target or {}
    elem = mc.dtype_bytes(
        inputs.engine_args.get("kv_cache_dtype"), mc.model_dtype_bytes(target, inputs.engine_args.get("dtype"))
    )
    # Pipeline stages split the target's layers (weights and KV cache); the draft and the sampler's logits live
    # on the last stage only (vLLM builds the draft with pipeline_parallel_size=1), the GPUs figured here.
    target_layers = -(-mc.attention_layers(target) // pp) if target else 0
    target_kv = mc.kv_bytes_per_token(target, target_layers, elem, tp) if target else 0
    draft_kv, draft_weights, draft_vocab = 0, 0, 0
    if inputs.method == "mtp" and target:
        # MTP heads are extra decoder layers of the target: their weights are in its checkpoint already.
        draft_kv = mc.kv_bytes_per_token(target, inputs.mtp_heads or 1, elem, tp)
        draft_vocab = mc.vocab_size(target) or 0
    elif inputs.draft is not None:
        draft = mc.draft_view(inputs.draft)
        draft_tp = r["draft_tensor_parallel_size"]
        draft_kv = mc.kv_bytes_per_token(draft, mc.num_layers(draft), elem, draft_tp)
        draft_weights = (inputs.draft_weight_bytes or 0) // draft_tp
        draft_vocab = int(draft.get("draft_vocab_size") or mc.vocab_size(draft) or 0)
    target_vocab = mc.vocab_size(target) or 0
    activations = seqs * k * (2 * target_vocab + draft_vocab) * LOGIT_BYTES
    figures = dict(r)
    figures.update(
        {
            "kv_cache_bytes_per_token_target": target_kv,
            "kv_cache_bytes_per_token_draft": draft_kv,
            "draft_weight_bytes": draft_weights,
            "draft_kv_cache_bytes_full_concurrency": draft_kv * length * seqs,
            "verify_activation_bytes": activations,
            "extra_bytes": draft_weights + activations + draft_kv * length,
        }
    )
    if inputs.target_weight_bytes is not None:
        target_weights = inputs.target_weight_bytes // (tp * pp)
        figures["target_weight_bytes"] = target_weights
        figures["required_bytes"] = target_weights + draft_weights + activations + (target_kv + draft_kv) * length
    return figures


def check_headroom(inputs: MemoryInputs) -> Check:
    figures = estimate(inputs)
    if inputs.gpus is None or not inputs.gpus:
        return skipped(NAME, "no GPU is visible (nvidia-ml-py or the NVIDIA driver is absent)", **figures)
    if "required_bytes" not in figures:
        return skipped(NAME, "the target's weights are not available locally to size them", **figures)
    tp = figures["tensor_parallel_size"]
    if len(inputs.gpus) < tp:
        return skipped(NAME, f"tensor_parallel_size is {tp} but {len(inputs.gpus)} GPU(s) are visible", **figures)
    gpu = min(inputs.gpus[:tp], key=lambda g: g.total - g.used)
    util = figures["gpu_memory_utilization"]
    budget = int(gpu.total * util)
    free = gpu.total - gpu.used
    figures.update({"gpu_name": gpu.name, "gpu_total_bytes": gpu.total, "gpu_free_bytes": free, "budget_bytes": budget})
    length, target_kv = figures["max_model_len"], figures["kv_cache_bytes_per_token_target"]
    per_seq = (target_kv + figures["kv_cache_bytes_per_token_draft"]) * length
    figures["required_bytes_without_speculation"] = base = figures["target_weight_bytes"] + target_kv * length
    figures["sequences_at_max_model_len"] = (
        max(0, (budget - figures["required_bytes"] + per_seq) // per_seq) if per_seq else None
    )
    figures["sequences_at_max_model_len_without_speculation"] = (
        max(0, (budget - base + target_kv * length) // (target_kv * length)) if target_kv * length else None
    )
    if free < budget:
        return Check(
            NAME,
            FAIL,
            f"{gpu.name} has {_gib(free)} free of {_gib(gpu.total)}, less than the {_gib(budget)} that "
            f"gpu_memory_utilization {util} reserves (other processes hold {_gib(gpu.used)})",
            f"lower --gpu-memory-utilization to {int(free / gpu.total * 100) / 100} or less, or stop the other processes on the GPU",  # noqa: E501
            "GPU memory",
            figures,
        )
    if figures["required_bytes"] <= budget:
        return passed(NAME, **figures)
    if figures["target_weight_bytes"] >= budget:
        return Check(
            NAME,
            FAIL,
            f"the target's weights alone need {_gib(figures['target_weight_bytes'])} per GPU but {gpu.name} offers "
            f"{_gib(budget)} ({_gib(gpu.total)} x gpu_memory_utilization {util})",
            f"spread the target over more GPUs (--tensor-parallel-size, now {tp}) or serve a quantized checkpoint",
            "GPU memory",
            figures,
        )
    lighter = getattr(method_row(inputs.method), "lighter", None)
    return Check(
        NAME,
        FAIL,
        f"the plan needs {_gib(figures['required_bytes'])} per GPU but {gpu.name} offers {_gib(budget)} "
        f"({_gib(gpu.total)} x gpu_memory_utilization {util}): target weights {_gib(figures['target_weight_bytes'])}, "
        f"draft weights {_gib(figures['draft_weight_bytes'])}, activations to verify {figures['num_speculative_tokens']} "  # noqa: E501
        f"tokens {_gib(figures['verify_activation_bytes'])}, KV cache of one {length}-token sequence {_gib(per_seq)}; "
        f"{'even ' if base > budget else ''}without speculative decoding it would need {_gib(base)}",
        f"use a shorter NIM_MAX_MODEL_LEN (now {length}), lower concurrency (--max-num-seqs, now "
        f"{figures['max_num_seqs']}), a different --gpu-memory-utilization (now {util})"
        + (f", or a lighter method ({lighter})" if lighter else ", or serve without speculative decoding"),
        "GPU memory",
        figures,
    )
