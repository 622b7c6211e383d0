"""NIM_* variables nim-specdec does not read: none is silently ignored (pure, over the environment as a mapping).

A name that is not in config.variables gets one warning naming it and, where one is close, the known name
meant (`NIM_SPECDEC_ENABLED` -> NIM_SPECDEC_ENABLE); a lower-case `nim_*` spelling is named too (the launcher
reads upper case only). A variable NIM for LLMs documents but nim-specdec does not implement says so and what
to use instead. Other tools' variables (VLLM_*, HF_*, CUDA_*, ...) are theirs and are never judged here.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Mapping

from nim_specdec.config import download_variables as dvar
from nim_specdec.config import variables as var

UNKNOWN = "unknown"
NOT_IMPLEMENTED = "not implemented"
_PASS = f"use vLLM's own arguments in {var.PASSTHROUGH_ARGS}"

# NIM for LLMs variables (its Environment Variables reference, 1.x and 2.x, and the "not supported" lists of its
# container variants page) that set more than one vLLM argument or have no vLLM counterpart: what to do instead.
UNIMPLEMENTED_NIM_VARIABLES: dict[str, str] = {
    "NIM_MODEL_PROFILE": f"profiles are NIM's own: set {var.TENSOR_PARALLEL_SIZE}, "
    f"{var.PIPELINE_PARALLEL_SIZE}, or {_PASS} (--quantization, --dtype)",
    "NIM_MANIFEST_ALLOW_UNSAFE": "nim-specdec has no model manifest: nothing to set",
    "NIM_REPOSITORY_OVERRIDE": f"give the model's location in {var.MODEL_PATH} (hf://, ngc://, s3://, gs://)",
    "NIM_PEFT_SOURCE": f"for LoRA adapters, {_PASS} (--enable-lora --lora-modules NAME=PATH)",
    "NIM_PEFT_REFRESH_INTERVAL": f"for LoRA adapters, {_PASS} (--enable-lora --lora-modules NAME=PATH)",
    "NIM_PEFT_API_TIMEOUT_SECS": f"for LoRA adapters, {_PASS} (--enable-lora --lora-modules NAME=PATH)",
    "NIM_MAX_GPU_LORAS": f"{_PASS} (--max-loras)",
    "NIM_MAX_CPU_LORAS": f"{_PASS} (--max-cpu-loras)",
    "NIM_MAX_LORA_RANK": f"{_PASS} (--max-lora-rank)",
    "NIM_GUIDED_DECODING_BACKEND": f"{_PASS} (--structured-outputs-config)",
    "NIM_CUSTOM_GUIDED_DECODING_BACKENDS": f"{_PASS} (--structured-outputs-config)",
    "NIM_TRUST_CUSTOM_CODE": f"{_PASS} (--trust-remote-code), only for a model whose code you trust",
    "NIM_HEALTH_PORT": f"health is served on {var.SERVER_PORT} (/v1/health/ready, /health): nothing to set",
    "NIM_NUM_COMPUTE_NODES": f"set up multi-node serving in the deployment (docs/deploy.md) and {_PASS}",
    "NIM_SAGEMAKER_MODE": "nim-specdec has no SageMaker mode",
    "NIM_MIDDLEWARE_CONFIG_PATH": "nim-specdec's own middleware (endpoints, capture) needs no config file",
    "NIM_NGINX_DIR": "nim-specdec runs no nginx: vLLM's server answers on the port itself",
    "NIM_SSL_MODE": f"{_PASS} (--ssl-keyfile, --ssl-certfile, --ssl-ca-certs)",
    "NIM_SSL_KEY_PATH": f"{_PASS} (--ssl-keyfile)",
    "NIM_SSL_CERTS_PATH": f"{_PASS} (--ssl-certfile)",
    "NIM_SSL_CA_CERTS_PATH": f"{_PASS} (--ssl-ca-certs)",
    "NIM_CORS_ALLOW_ORIGINS": f"{_PASS} (--allowed-origins)",
    "NIM_CORS_ALLOW_METHODS": f"{_PASS} (--allowed-methods)",
    "NIM_CORS_ALLOW_HEADERS": f"{_PASS} (--allowed-headers)",
    "NIM_CORS_EXPOSE_HEADERS": "vLLM's server has no such setting",
    "NIM_CORS_MAX_AGE": "vLLM's server has no such setting",
    "NIM_CACHE_PROBE_TIMEOUT": f"use {dvar.DOWNLOAD_TIMEOUT}",
    "NIM_KVCACHE_PERCENT": f"{_PASS} (--gpu-memory-utilization)",
    "NIM_NUM_KV_CACHE_SEQ_LENS": f"{_PASS} (--max-num-seqs)",
    "NIM_ENABLE_KV_CACHE_HOST_OFFLOAD": f"{_PASS} (--kv-offloading-size)",
    "NIM_KV_CACHE_HOST_MEM_FRACTION": f"{_PASS} (--kv-offloading-size)",
    "NIM_SCHEDULER_POLICY": f"{_PASS} (--scheduling-policy)",
    "NIM_DISABLE_OVERLAP_SCHEDULING": f"{_PASS} (--no-async-scheduling)",
    "NIM_FORCE_DETERMINISTIC": "use VLLM_BATCH_INVARIANT=1 (vLLM's batch-invariant mode)",
    "NIM_ENABLE_PROMPT_LOGPROBS": f"{_PASS} (--max-logprobs)",
    "NIM_PER_REQ_METRICS_ENABLE": "vLLM's /metrics has the per-request histograms: nothing to set",
    "NIM_CUSTOM_MODEL_NAME": f"use {var.SERVED_MODEL_NAME}",
    "NIM_FT_MODEL": f"use {var.MODEL_PATH}",
    "NIM_REWARD_MODEL": "nim-specdec does not serve reward models",
    "NIM_REWARD_MODEL_STRING": "nim-specdec does not serve reward models",
    "NIM_REWARD_LOGITS_RANGE": "nim-specdec does not serve reward models",
    "NIM_DISABLE_LOG_REQUESTS": "vLLM does not log requests unless --enable-log-requests is given: nothing to set",
    "NIM_ENABLE_OTEL": f"for OpenTelemetry traces, {_PASS} (--otlp-traces-endpoint URL); vLLM's exporter reads "
    "the OTEL_EXPORTER_OTLP_* variables",
    "NIM_TOKENIZER_MODE": f"{_PASS} (--tokenizer-mode)",
    # The image's build argument of that name sets its user at build time; at run time the user is the runtime's.
    "NIM_UID": "the container's user is chosen by its runtime: `docker run --user UID:0`, the pod's "
    "securityContext.runAsUser (or the UID OpenShift assigns), or `docker build --build-arg NIM_UID=...`",
}


@dataclass(frozen=True)
class IgnoredVariable:
    name: str
    reason: str  # UNKNOWN or NOT_IMPLEMENTED
    hint: str  # the close known name, or what to use instead ("" when nothing is close)

    def warning(self) -> str:
        if self.reason == NOT_IMPLEMENTED:
            what = "(a NIM for LLMs variable) is not implemented by nim-specdec and is ignored"
            return f"{self.name} {what}: {self.hint}"
        text = f"{self.name} is not a variable nim-specdec reads and is ignored"
        return f"{text}; did you mean {self.hint}?" if self.hint else text

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "reason": self.reason, "hint": self.hint}


def _closest(name: str) -> str:
    upper = name.upper()
    if upper in var.TABLE or upper in UNIMPLEMENTED_NIM_VARIABLES:
        return upper  # a lower-case spelling of a real name
    known = [v.name for v in var.documented()]
    found = difflib.get_close_matches(upper, known, n=1, cutoff=0.75)
    return found[0] if found else ""


def ignored_variables(env: Mapping[str, str]) -> list[IgnoredVariable]:
    """Every NIM_* (or nim_*, any case) variable in `env` that nim-specdec does not read, sorted by name."""
    found = []
    for name in sorted(env):
        if not name.upper().startswith("NIM_") or name in var.TABLE:
            continue
        if name in UNIMPLEMENTED_NIM_VARIABLES:
            found.append(IgnoredVariable(name, NOT_IMPLEMENTED, UNIMPLEMENTED_NIM_VARIABLES[name]))
        else:
            found.append(IgnoredVariable(name, UNKNOWN, _closest(name)))
    return found


def strict_problem(ignored: list[IgnoredVariable]) -> str:
    """The one line NIM_STRICT_VARIABLES=1 stops with (ConfigError's problem)."""
    return "; ".join(item.warning() for item in ignored)
