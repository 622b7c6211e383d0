"""Every NIM_* variable the launcher reads, declared once: name, type, default, range or choices, meaning.

The parsers (config.settings and the modules it calls) take each variable's range, choices and default from
here, docs/configuration.md's variables table is generated from here (scripts/variables_doc.py; a test
compares the two), and the rest of the launcher names a variable through the constants below, never as a
string of its own. Standard library only: the vLLM server process imports it too, and start-up time counts.

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
    declare as _declare,
    documented,
    vllm_mapped,
)

# What to serve, and speculative decoding.
SPECDEC_ENABLE = _declare(
    "NIM_SPECDEC_ENABLE",
    "bool",
    False,
    "`1` applies the model's built-in speculative config (also `true/false`, `yes/no`, `on/off`, any case).",
    nim="2.x",
)
SPECDEC_ARGS = _declare(
    "NIM_SPECDEC_ARGS",
    "json",
    None,
    "JSON object of vLLM runtime-config keys (snake or kebab case). `speculative_config` may be an object or a "
    "JSON string; other keys (`gpu_memory_utilization`, `max_num_seqs`, ...) become vLLM arguments. Used only when "
    "`NIM_SPECDEC_ENABLE=1`; ignored with a warning otherwise.",
    nim="2.x",
)
DRAFT_MODEL_PATH = _declare(
    "NIM_DRAFT_MODEL_PATH",
    "source",
    None,
    "Where the draft comes from: `ngc://ORG/[TEAM/]NAME:VERSION`, `hf://ORG/NAME[@REV]`, `s3://BUCKET/PREFIX`, "
    "`gs://BUCKET/PREFIX` or an absolute directory. Wins over the draft shipped with a built-in model.",
    nim="2.x",
)
MODEL_PATH = _declare(
    "NIM_MODEL_PATH", "source", None, "Model-free mode: the target model, from the same kinds of locations.", nim="2.x"
)
MODEL_NAME = _declare(
    "NIM_MODEL_NAME",
    "text",
    None,
    "Model-specific mode: a built-in model (file in `configs/builtin_specdec/`), by NIM name, repository id or alias.",
    nim="1.x",
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
)
MAX_MODEL_LEN = _declare(
    "NIM_MAX_MODEL_LEN", "int", None, "`--max-model-len`.", nim="2.x", lo=1, hi=MAX_INT, vllm="max_model_len"
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
SERVER_PORT = _declare("NIM_SERVER_PORT", "int", 8000, "`--port`.", nim="2.x", lo=1, hi=65535, vllm="port")
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
PASSTHROUGH_ARGS = _declare("NIM_PASSTHROUGH_ARGS", "args", None, "Extra vLLM arguments, shell-quoted.", nim="2.x")

# Where files go.
CACHE_PATH = _declare(
    "NIM_CACHE_PATH", "path", "/opt/nim/.cache", "Download cache (shared by replicas on one volume).", nim="2.x"
)
WORKSPACE = _declare(
    "NIM_WORKSPACE",
    "path",
    None,
    "Where the target and drafts are linked under their bare names. The image sets `/opt/nim/workspace`, in "
    "each container's own file system: containers sharing a cache volume never share it.",
    shown_default="`$NIM_CACHE_PATH/workspace`",
)
CACHE_TRUST_SHARED = _declare(
    "NIM_CACHE_TRUST_SHARED",
    "bool",
    False,
    "`1`: the platform vouches that only this workload's pods mount the cache volume, so a volume whose "
    "owners and modes cannot prove it (root-owned `0777` without the sticky bit; SMB reporting every file as "
    "root's and `0777`) is used, with one warning at every start. Prefer the fixes of docs/deploy.md.",
)
DISABLE_MODEL_DOWNLOAD = _declare(
    "NIM_DISABLE_MODEL_DOWNLOAD", "bool", False, "`1`: use the cache only, never the network.", nim="2.x"
)
BUILTIN_CONFIG_DIR = _declare(
    "NIM_BUILTIN_CONFIG_DIR",
    "text",
    None,
    "Directory of built-in config files (for testing a new entry).",
    shown_default="the packaged configs",
)

# Logging, checks and records.
LOG_LEVEL = _declare(
    "NIM_LOG_LEVEL",
    "choice",
    "INFO",
    "Log level.",
    nim="2.x",
    choices=("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"),
)
JSONL_LOGGING = _declare("NIM_JSONL_LOGGING", "bool", False, "`1`: one JSON object per log line.", nim="2.x")
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
)
CAPTURE_ENABLE = _declare(
    "NIM_CAPTURE_ENABLE",
    "bool",
    False,
    "`1` records the request bodies the server receives, for replay with AIPerf (see "
    "[Payload capture](capture.md#payload-capture)). **The file holds real prompts.**",
    nim="2.x",
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
)
PLAN_VLLM_VERSION = _declare(
    "NIM_PLAN_VLLM_VERSION",
    "text",
    None,
    "`plan` only: the vLLM release (`X.Y.Z`, e.g. the image's `0.34.0`) to plan for instead of the installed one, "
    "on the CUDA platform; the plan names the snapshot it read. `prepare` and `serve` refuse a value other than "
    "the installed release (exit 2).",
    shown_default="the installed vLLM",
)

# Downloads (docs/sources.md).
DOWNLOAD_TIMEOUT = _declare(
    "NIM_DOWNLOAD_TIMEOUT",
    "number",
    30.0,
    "Seconds a connection or read may stall before it fails.",
    lo=0.1,
    hi=86400,
)
DOWNLOAD_RETRIES = _declare(
    "NIM_DOWNLOAD_RETRIES",
    "int",
    3,
    "Whole-download retries after a transient failure (timeouts, dropped connections, 5xx), with backoff.",
    lo=0,
    hi=100,
)
DOWNLOAD_CONCURRENCY = _declare(
    "NIM_DOWNLOAD_CONCURRENCY", "int", 10, "Parallel transfers (files and ranged parts).", lo=1, hi=256
)
DOWNLOAD_CHUNK_MB = _declare(
    "NIM_DOWNLOAD_CHUNK_MB", "int", 8, "Part size of ranged downloads (s3), in MiB.", lo=1, hi=4096
)
DOWNLOAD_VERIFY = _declare(
    "NIM_DOWNLOAD_VERIFY",
    "choice",
    "checksum",
    "`size` skips hashing the files (faster for large drafts).",
    choices=("checksum", "size"),
)
DOWNLOAD_DEADLINE = _declare(
    "NIM_DOWNLOAD_DEADLINE",
    "number",
    86400.0,
    "Seconds one source's download may take in all before it is given up and its lock released (`0`: none).",
    lo=0,
    hi=30 * 86400,
)
DOWNLOAD_MIN_RATE_KB = _declare(
    "NIM_DOWNLOAD_MIN_RATE_KB",
    "number",
    16.0,
    "KiB/s a download must average over 4 x `NIM_DOWNLOAD_TIMEOUT`, else it is cut off (`0`: none).",
    lo=0,
    hi=10**7,
)
CACHE_LOCK_TIMEOUT = _declare(
    "NIM_CACHE_LOCK_TIMEOUT",
    "number",
    7200.0,
    "Seconds to wait for another launcher's download (`0`: no limit).",
    lo=0,
    hi=7 * 86400,
)
PROGRESS_INTERVAL = _declare(
    "NIM_PROGRESS_INTERVAL",
    "number",
    5.0,
    "Seconds between progress lines (bytes, rate, ETA) when stderr is not a terminal.",
    lo=0.1,
    hi=86400,
)
HF_RESOLVE_TIMEOUT = _declare(
    "NIM_HF_RESOLVE_TIMEOUT_S",
    "number",
    10.0,
    "Seconds a start may spend asking the Hub which commit an `hf://` branch or tag names (all attempts "
    "together) when a commit of it is complete in the cache; past it, or on a refused token (401/403) or a "
    "5xx, that commit is served with one warning. Nothing cached: `NIM_DOWNLOAD_TIMEOUT` and "
    "`NIM_DOWNLOAD_RETRIES` apply.",
    lo=0.5,
    hi=3600,
)
HF_BRANCH_FOLLOW = _declare(
    "NIM_HF_BRANCH_FOLLOW_S",
    "number",
    1800.0,
    "Seconds the commit one start resolved an `hf://` branch or tag to is served by every start sharing the cache, "
    "without asking the Hub again, so that the pods of one rollout serve one commit (`0`: every start asks). "
    "`hf://ORG/NAME@COMMIT` pins a commit for good.",
    lo=0,
    hi=30 * 86400,
)
S3_ANONYMOUS = _declare("NIM_S3_ANONYMOUS", "bool", False, "`1`: unsigned S3 requests (public buckets).")
S5CMD = _declare(
    "NIM_S5CMD",
    "choice",
    "auto",
    "s3:// transfer client: `auto` = `s5cmd` when installed, else boto3; `1` = `s5cmd`, required; `0` = boto3.",
    choices=("auto", "1", "0"),
)

# Written by the launcher into the environment of the vLLM process it execs.
VLLM_CHECK_CONTEXT = _declare(
    "NIM_VLLM_CHECK_CONTEXT", "json", None, "What the in-process vLLM check logs with.", internal=True
)
