"""Every NIM_* variable the launcher reads, declared once: name, type, default, range or choices, meaning, and
the settings field it lands on (the download variables are declared the same way in config.download_variables).

A row is all a new variable takes: config.settings reads the environment by the table (config.table_reader:
each row's reader, range, choices and default) into the field the row names, docs/configuration.md's
variables table and docs/sources.md's are generated from it (scripts/variables_doc.py; a test compares them),
and the launcher and the lab name a variable through the constants below, never as a string of their own.
Standard library only: the vLLM server process imports it too, and start-up time counts.

`nim` says where NIM for LLMs documents a variable of the same name: "2.x" (2.1.x's Environment Variables
reference, https://docs.nvidia.com/nim/large-language-models/2.1.5/reference/environment-variables.html, the
index of `nim_llm.utils.envs`, and its Speculative Decoding page for NIM_SPECDEC_* and NIM_DRAFT_MODEL_PATH),
"1.x" (the 1.x configuration pages), or "" (ours alone). NIM's variables this launcher does not read are in
config.variable_check, each with what to use instead.
`vllm` names the one vLLM engine argument a variable sets, at NIM's precedence (docs/configuration.md).
"""

from __future__ import annotations

from nim_specdec.config.variable_table import (  # noqa: F401 - the table's types and readers, named here too
    MAX_INT,
    TABLE,
    Default,
    Variable,
    documented,
    vllm_mapped,
)
from nim_specdec.config.variable_table import (
    declare as _declare,
)

# What to serve, and speculative decoding.
SPECDEC_ENABLE = _declare(
    "NIM_SPECDEC_ENABLE",
    "bool",
    False,
    "`1` applies the model's built-in speculative config (also `true/false`, `yes/no`, `on/off`, any case).",
    nim="2.x",
    field="speculation.enable",
)
SPECDEC_ARGS = _declare(
    "NIM_SPECDEC_ARGS",
    "json",
    None,
    "JSON object of vLLM runtime-config keys (snake or kebab case). `speculative_config` may be an object or a "
    "JSON string; other keys (`gpu_memory_utilization`, `max_num_seqs`, ...) become vLLM arguments. Used only when "
    "`NIM_SPECDEC_ENABLE=1`; ignored with a warning otherwise.",
    nim="2.x",
    field="speculation.specdec_args",
)
DRAFT_MODEL_PATH = _declare(
    "NIM_DRAFT_MODEL_PATH",
    "source",
    None,
    "Where the draft comes from: `ngc://ORG/[TEAM/]NAME:VERSION`, `hf://ORG/NAME[@REV]`, `s3://BUCKET/PREFIX`, "
    "`gs://BUCKET/PREFIX` or an absolute directory. Wins over the draft shipped with a built-in model.",
    nim="2.x",
    field="speculation.draft_source",
)
MODEL_PATH = _declare(
    "NIM_MODEL_PATH",
    "source",
    None,
    "Model-free mode: the target model, from the same kinds of locations.",
    nim="2.x",
    field="target.model_source",
)
MODEL_NAME = _declare(
    "NIM_MODEL_NAME",
    "text",
    None,
    "Model-specific mode: a built-in model (file in `configs/builtin_specdec/`), by NIM name, repository id or alias.",
    nim="1.x",
    field="target.model_name",
)
SERVED_MODEL_NAME = _declare(
    "NIM_SERVED_MODEL_NAME",
    "text",
    None,
    "`--served-model-name`: the one name clients use. Unset, a built-in model is served under its NIM name and its "
    "repository id.",
    nim="2.x",
    vllm="served_model_name",
    shown_default="built-in names, or the remote source's name",
    field="engine_variables.served_model_name",
)
MAX_MODEL_LEN = _declare(
    "NIM_MAX_MODEL_LEN",
    "int",
    None,
    "`--max-model-len`.",
    nim="2.x",
    lo=1,
    hi=MAX_INT,
    vllm="max_model_len",
    field="engine_variables.max_model_len",
)
TENSOR_PARALLEL_SIZE = _declare(
    "NIM_TENSOR_PARALLEL_SIZE",
    "int",
    None,
    "`--tensor-parallel-size`: GPUs each layer is split across.",
    nim="2.x",
    lo=1,
    hi=1024,
    vllm="tensor_parallel_size",
)
PIPELINE_PARALLEL_SIZE = _declare(
    "NIM_PIPELINE_PARALLEL_SIZE",
    "int",
    None,
    "`--pipeline-parallel-size`: pipeline stages (GPUs or nodes).",
    nim="2.x",
    lo=1,
    hi=1024,
    vllm="pipeline_parallel_size",
)
DISABLE_CUDA_GRAPH = _declare(
    "NIM_DISABLE_CUDA_GRAPH",
    "bool",
    None,
    "`1`: `--enforce-eager` (no CUDA graphs); `0`: `--no-enforce-eager`.",
    nim="2.x",
    vllm="enforce_eager",
)
ENABLE_KV_CACHE_REUSE = _declare(
    "NIM_ENABLE_KV_CACHE_REUSE",
    "bool",
    None,
    "`1`: `--enable-prefix-caching` (NIM's KV cache reuse); `0`: `--no-enable-prefix-caching`.",
    nim="1.x",
    vllm="enable_prefix_caching",
)
SERVER_PORT = _declare(
    "NIM_SERVER_PORT", "int", 8000, "`--port`.", nim="2.x", lo=1, hi=65535, vllm="port", field="engine_variables.port"
)
SHUTDOWN_TIMEOUT = _declare(
    "NIM_SHUTDOWN_TIMEOUT",
    "int",
    60,
    "`--shutdown-timeout`: seconds vLLM drains the requests in flight on SIGTERM, refusing new ones, before it "
    "aborts what is left (`0`: abort at once, vLLM's own default). Keep it below the pod's grace period.",
    lo=0,
    hi=86400,
    vllm="shutdown_timeout",
)
PASSTHROUGH_ARGS = _declare(
    "NIM_PASSTHROUGH_ARGS",
    "args",
    None,
    "Extra vLLM arguments, shell-quoted.",
    nim="2.x",
    field="target.passthrough_args",
)

# Where files go.
CACHE_PATH = _declare(
    "NIM_CACHE_PATH",
    "path",
    "/opt/nim/.cache",
    "Download cache (shared by replicas on one volume).",
    nim="2.x",
    field="locations.cache_path",
)
WORKSPACE = _declare(
    "NIM_WORKSPACE",
    "path",
    None,
    "Where the target and drafts are linked under their bare names. The image sets `/opt/nim/workspace`, in "
    "each container's own file system: containers sharing a cache volume never share it.",
    shown_default="`$NIM_CACHE_PATH/workspace`",
    field="locations.workspace",
    reader="workspace",
)
CACHE_TRUST_SHARED = _declare(
    "NIM_CACHE_TRUST_SHARED",
    "bool",
    False,
    "`1`: the platform vouches that only this workload's pods mount the cache volume, so a volume whose "
    "owners and modes cannot prove it (root-owned `0777` without the sticky bit; SMB reporting every file as "
    "root's and `0777`) is used, with one warning at every start. Prefer the fixes of docs/deploy.md.",
    field="cache_trust_shared",
)
DISABLE_MODEL_DOWNLOAD = _declare(
    "NIM_DISABLE_MODEL_DOWNLOAD",
    "bool",
    False,
    "`1`: use the cache only, never the network.",
    nim="2.x",
    field="disable_download",
)
BUILTIN_CONFIG_DIR = _declare(
    "NIM_BUILTIN_CONFIG_DIR",
    "text",
    None,
    "Directory of built-in config files (for testing a new entry).",
    shown_default="the packaged configs",
    field="builtin_config_dir",
)

# Logging, checks and records.
LOG_LEVEL = _declare(
    "NIM_LOG_LEVEL",
    "choice",
    "INFO",
    "Log level.",
    nim="2.x",
    choices=("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"),
    field="log_level",
)
JSONL_LOGGING = _declare(
    "NIM_JSONL_LOGGING", "bool", False, "`1`: one JSON object per log line.", nim="2.x", field="jsonl_logging"
)
STRICT_VARIABLES = _declare(
    "NIM_STRICT_VARIABLES",
    "bool",
    False,
    "`1`: a `NIM_*` variable nim-specdec does not read (unknown, misspelt or not implemented) is an error (exit 2) "
    "instead of a warning.",
)
SPECDEC_PREFLIGHT = _declare(
    "NIM_SPECDEC_PREFLIGHT",
    "choice",
    None,
    "What a failed pre-flight check does, for every category (see [Pre-flight checks](preflight.md)).",
    choices=("error", "warn", "off"),
    shown_default="`error` for compatibility, `warn` for memory",
    field="preflight",
    reader="preflight",
)
CAPTURE_ENABLE = _declare(
    "NIM_CAPTURE_ENABLE",
    "bool",
    False,
    "`1` records the request bodies the server receives, for replay with AIPerf (see "
    "[Payload capture](capture.md#payload-capture)). **The file holds real prompts.**",
    nim="2.x",
    field="capture",
    reader="capture",
)
CAPTURE_ARGS = _declare(
    "NIM_CAPTURE_ARGS",
    "json",
    None,
    "JSON object: `path` (default `$NIM_CACHE_PATH/captures/payloads.jsonl`), `format` (`mooncake_payload`, "
    "default, or `raw_payload`), `endpoint_pattern` (regular expression searched in the request path, default "
    "`^/v1/chat/completions$`).",
    nim="2.x",
)
TUNED_FOR = _declare(
    "NIM_TUNED_FOR",
    "json",
    None,
    'Written by `nim-specdec tune` with its recommendation: the engine it was measured on, `{"vllm": "0.32.0", '
    '"runner": "v1", "platform": "cpu", "device": "AMD EPYC 7B12"}`. The plan warns where its own engine differs; '
    "a malformed value is exit 2.",
    field="tuned_for",
    reader="tuned_for",
)
PLAN_VLLM_VERSION = _declare(
    "NIM_PLAN_VLLM_VERSION",
    "text",
    None,
    "`plan` only: the vLLM release (`X.Y.Z`, e.g. the image's `0.34.0`) to plan for instead of the installed one, "
    "on the CUDA platform; the plan names the snapshot it read. `prepare` and `serve` refuse a value other than "
    "the installed release (exit 2).",
    shown_default="the installed vLLM",
    field="plan_vllm_version",
    reader="release",
)
ENGINE = _declare(
    "NIM_ENGINE",
    "choice",
    "vllm",
    "The inference engine the launcher plans for and serves with: `vllm`, or `sglang` (SGLang 0.5's "
    "`python -m sglang.launch_server`, with the same `NIM_SPECDEC_*` and `NIM_DRAFT_MODEL_PATH`; see "
    "[SGLang](sglang.md)). NIM for LLMs has no such variable: each of its images holds one engine.",
    choices=("vllm", "sglang"),
    field="engine",
)

# Written by the launcher into the environment of the vLLM process it execs.
VLLM_CHECK_CONTEXT = _declare(
    "NIM_VLLM_CHECK_CONTEXT", "json", None, "What the in-process vLLM check logs with.", internal=True
)

# The download variables (docs/sources.md) follow in the table; their rows and constants are that module's.
from nim_specdec.config import download_variables as _downloads  # noqa: E402, F401
