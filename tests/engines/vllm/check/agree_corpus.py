"""Generated differential cases: speculative configs and engine arguments in every form the launcher takes.

A case is what a user sets (environment + command-line arguments) and, beside it, the vLLM command
line that means the same thing when vLLM is run directly (`direct`): the launcher should accept the
case exactly when vLLM accepts `direct`, and run what `direct` runs.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from nim_specdec.engines.vllm.argv.engine_command import to_cli

MISSING = object()


@dataclass(frozen=True)
class Case:
    id: str
    env: dict[str, str]
    cli: list[str]
    direct: list[str]  # vLLM serve arguments after `--model TARGET`
    draft_map: dict[str, str] = field(default_factory=dict)  # workspace path -> directory, for bare names
    # workspace path -> directory an earlier start of the launcher linked there (launch.workspace.link)
    earlier_links: dict[str, str] = field(default_factory=dict)


def payloads(m: dict[str, Path]) -> Iterator[tuple[str, Any]]:
    """(name, speculative_config) pairs; a str payload is sent as raw text."""
    other, copy, eagle3 = str(m["draft-other"]), str(m["draft-copy"]), str(m["draft-eagle3"])
    ngram = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 1}
    yield "ngram", ngram
    yield "ngram-defaults", {"method": "ngram", "num_speculative_tokens": 3}
    yield "ngram-only-max", {"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_max": 3}
    yield "ngram-only-min", {"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_min": 2}
    yield "ngram-min-gt-max", {**ngram, "prompt_lookup_min": 5}
    yield "ngram-no-k", {"method": "ngram"}
    yield "ngram-gpu", {"method": "ngram_gpu", "num_speculative_tokens": 3}
    yield "model-ngram", {"model": "ngram", "num_speculative_tokens": 3}
    for label, value in (
        ("str", "3"),
        ("float", 3.0),
        ("float-frac", 2.5),
        ("bool", True),
        ("zero", 0),
        ("neg", -1),
        ("null", None),
        ("word", "three"),
        ("big", 10**6),
    ):
        yield f"ngram-k-{label}", {**ngram, "num_speculative_tokens": value}
    for label, value in (("str", "4"), ("zero", 0), ("null", None), ("float", 4.0)):
        yield f"ngram-max-{label}", {**ngram, "prompt_lookup_max": value}
    for label, value in (
        ("true-str", "true"),
        ("yes", "yes"),
        ("one", 1),
        ("zero", 0),
        ("null", None),
        ("word", "maybe"),
        ("two", 2),
    ):
        yield f"bool-{label}", {**ngram, "disable_padded_drafter_batch": value}
    yield "enforce-eager-null", {**ngram, "enforce_eager": None}
    yield "enforce-eager-true", {**ngram, "enforce_eager": True}
    yield "kebab-keys", {"method": "ngram", "num-speculative-tokens": 3, "prompt-lookup-max": 4}
    yield "unknown-key", {**ngram, "lookahead": 2}
    yield "internal-key", {**ngram, "draft_model_config": {}}
    yield "tp-key", {**ngram, "tensor_parallel_size": 1}
    yield "method-null", {"method": None, "model": other, "num_speculative_tokens": 2}
    yield "method-bogus", {"method": "bogus", "num_speculative_tokens": 3}
    yield "method-upper", {"method": "NGRAM", "num_speculative_tokens": 3}
    yield "empty", {}
    yield "not-object", "[1, 2]"
    yield "bad-json", '{"method": "ngram",'
    yield "json-string-null", "null"
    # drafts named by absolute path
    yield "draft-model", {"method": "draft_model", "model": other, "num_speculative_tokens": 3}
    yield "draft-model-no-k", {"method": "draft_model", "model": other}
    yield "draft-no-method", {"model": other, "num_speculative_tokens": 3}
    yield "draft-no-method-copy", {"model": copy, "num_speculative_tokens": 2}
    yield "eagle3-no-method", {"model": eagle3, "num_speculative_tokens": 3}
    yield "eagle3", {"method": "eagle3", "model": eagle3, "num_speculative_tokens": 3}
    yield "eagle3-no-k", {"method": "eagle3", "model": eagle3}
    yield "eagle3-no-model", {"method": "eagle3", "num_speculative_tokens": 3}
    yield "eagle", {"method": "eagle", "model": eagle3, "num_speculative_tokens": 2}
    yield (
        "draft-tp-1",
        {"method": "draft_model", "model": other, "num_speculative_tokens": 3, "draft_tensor_parallel_size": 1},
    )
    yield (
        "draft-tp-2",
        {"method": "draft_model", "model": other, "num_speculative_tokens": 3, "draft_tensor_parallel_size": 2},
    )
    yield (
        "draft-max-len-ok",
        {"method": "draft_model", "model": other, "num_speculative_tokens": 3, "max_model_len": 512},
    )
    yield (
        "draft-max-len-big",
        {"method": "draft_model", "model": other, "num_speculative_tokens": 3, "max_model_len": 100000},
    )
    yield (
        "draft-max-len-1k",
        {"method": "draft_model", "model": other, "num_speculative_tokens": 3, "max_model_len": "1k"},
    )
    yield "hetero-vocab-ngram", {**ngram, "use_heterogeneous_vocab": True}
    yield (
        "hetero-vocab-draft",
        {"method": "draft_model", "model": other, "num_speculative_tokens": 3, "use_heterogeneous_vocab": True},
    )
    yield "parallel-drafting", {**ngram, "parallel_drafting": True}
    yield "draft-revision", {"method": "draft_model", "model": other, "num_speculative_tokens": 3, "revision": "main"}
    yield (
        "draft-load-config",
        {
            "method": "draft_model",
            "model": other,
            "num_speculative_tokens": 3,
            "draft_load_config": {"load_format": "auto"},
        },
    )
    yield (
        "draft-load-config-bad",
        {"method": "draft_model", "model": other, "num_speculative_tokens": 3, "draft_load_config": {"load_format": 5}},
    )
    yield (
        "draft-quant-bogus",
        {"method": "draft_model", "model": other, "num_speculative_tokens": 3, "quantization": "bogus"},
    )
    yield "dspark-topk", {**ngram, "dspark_draft_topk": 4}
    yield "index-share", {**ngram, "index_share_for_mtp_iteration": True}
    # methods that need something the demo model does not have
    for method in (
        "mtp",
        "deepseek_mtp",
        "medusa",
        "mlp_speculator",
        "custom_class",
        "extract_hidden_states",
        "dflash",
        "dspark",
        "suffix",
    ):
        yield f"method-{method}", {"method": method, "num_speculative_tokens": 2}
    yield "custom-class-path", {"model": "some_pkg.MyProposer", "num_speculative_tokens": 2}
    yield "suffix-depth", {"method": "suffix", "suffix_decoding_max_tree_depth": 8}
    yield "suffix-bad-prob", {"method": "suffix", "num_speculative_tokens": 2, "suffix_decoding_min_token_prob": 2}
    # vLLM checks the suffix keys for method suffix only (SpeculativeConfig.__post_init__): n-gram ignores them
    yield "ngram-suffix-depth-zero", {**ngram, "suffix_decoding_max_tree_depth": 0}
    yield "ngram-suffix-prob-two", {**ngram, "suffix_decoding_min_token_prob": 2}
    # enums
    for key, values in (
        ("kv_cache_dtype", ("auto", "fp8", "bogus", "FP8")),
        ("quantization", ("fp8", "bogus")),
        ("attention_backend", ("auto", "FLASH_ATTN", "flash_attn", "bogus", "CPU_ATTN")),
        ("moe_backend", ("auto", "bogus")),
        ("rejection_sample_method", ("standard", "block", "bogus")),
        ("draft_sample_method", ("greedy", "probabilistic", "Greedy")),
    ):
        for value in values:
            yield f"enum-{key}-{value}", {**ngram, key: value}
    # synthetic rejection sampling
    syn = {**ngram, "rejection_sample_method": "synthetic"}
    yield "synthetic-none", syn
    yield "synthetic-length", {**syn, "synthetic_acceptance_length": 2.5}
    yield "synthetic-length-high", {**syn, "synthetic_acceptance_length": 9}
    yield "synthetic-rates", {**syn, "synthetic_acceptance_rates": [0.9, 0.5, 0.1]}
    yield "synthetic-rates-short", {**syn, "synthetic_acceptance_rates": [0.9]}
    yield "synthetic-rates-rising", {**syn, "synthetic_acceptance_rates": [0.1, 0.5, 0.9]}
    yield "synthetic-rates-range", {**syn, "synthetic_acceptance_rates": [1.5, 0.5, 0.1]}
    yield "synthetic-both", {**syn, "synthetic_acceptance_rates": [0.9, 0.5, 0.1], "synthetic_acceptance_length": 2}
    yield "synthetic-without-method", {**ngram, "synthetic_acceptance_length": 2}
    yield "adaptive-verification", {**ngram, "enable_adaptive_verification": True}
    yield "adaptive-local-argmax", {**ngram, "enable_adaptive_verification": True, "use_local_argmax_reduction": True}
    # batch-size schedules
    for label, schedule in (
        ("ok", [[1, 4, 3], [5, 256, 1]]),
        ("strings", [["1", "4", "3"]]),
        ("gap", [[1, 4, 3], [8, 16, 1]]),
        ("not-from-1", [[2, 4, 3]]),
        ("overlap", [[1, 4, 3], [3, 8, 1]]),
        ("two-items", [[1, 4]]),
        ("empty", []),
        ("neg-k", [[1, 4, -1]]),
        ("reversed", [[4, 1, 3]]),
        ("not-list", 3),
        ("zero-k", [[1, 2, 3], [3, 256, 0]]),
        ("k-above", [[1, 4, 5]]),
        ("flat", [1, 4, 3]),
        ("tuples-str", "[[1,4,3]]"),
    ):
        yield f"schedule-{label}", {**ngram, "num_speculative_tokens_per_batch_size": schedule}


FORMS = (
    "cli-json",
    "cli-json-eq",
    "cli-sc",
    "cli-underscore",
    "cli-dotted",
    "env-object",
    "env-string",
    "passthrough-json",
    "passthrough-dotted",
)


def _dotted(flag: str, spec: dict[str, Any]) -> list[str] | None:
    tokens: list[str] = []
    for key, value in spec.items():
        if isinstance(value, dict):
            return None
        text = value if isinstance(value, str) else json.dumps(value)
        tokens += [f"{flag}.{key}", text]
    return tokens


def deliver(form: str, spec: Any) -> tuple[dict[str, str], list[str], list[str]] | None:
    """(env, cli, direct) for one payload in one form; None when the form cannot express it."""
    text = spec if isinstance(spec, str) else json.dumps(spec)
    if form == "cli-json":
        return {}, ["--speculative-config", text], ["--speculative-config", text]
    if form == "cli-json-eq":
        return {}, [f"--speculative-config={text}"], [f"--speculative-config={text}"]
    if form == "cli-sc":
        return {}, ["-sc", text], ["-sc", text]
    if form == "cli-underscore":
        return {}, ["--speculative_config", text], ["--speculative_config", text]
    if form in ("cli-dotted", "passthrough-dotted"):
        if not isinstance(spec, dict) or not spec:
            return None
        tokens = _dotted("--speculative-config", spec)
        if tokens is None:
            return None
        if form == "cli-dotted":
            return {}, tokens, tokens
        return {"NIM_PASSTHROUGH_ARGS": shlex.join(tokens)}, [], tokens
    if form == "env-object":
        if not isinstance(spec, dict):
            return None
        return {"NIM_SPECDEC_ARGS": json.dumps({"speculative_config": spec})}, [], ["--speculative-config", text]
    if form == "env-string":
        return {"NIM_SPECDEC_ARGS": json.dumps({"speculative_config": text})}, [], ["--speculative-config", text]
    if form == "passthrough-json":
        return {"NIM_PASSTHROUGH_ARGS": shlex.join(["--speculative-config", text])}, [], ["--speculative-config", text]
    raise ValueError(form)


def engine_cases() -> Iterator[tuple[str, dict[str, Any]]]:
    """Engine arguments beside an n-gram config, as NIM_SPECDEC_ARGS keys."""
    yield "max-num-seqs", {"max_num_seqs": 8}
    yield "max-num-seqs-str", {"max_num_seqs": "8"}
    yield "max-num-seqs-zero", {"max_num_seqs": 0}
    yield "batched-tokens", {"max_num_batched_tokens": 4096}
    yield "batched-tokens-small", {"max_num_batched_tokens": 16}
    yield "enforce-eager", {"enforce_eager": True}
    yield "enforce-eager-false", {"enforce_eager": False}
    yield "kebab", {"max-num-seqs": 4}
    yield "unknown", {"no_such_option": 1}
    yield "dtype", {"dtype": "float32"}
    yield "dtype-bogus", {"dtype": "float7"}
    yield "kv-dtype-bogus", {"kv_cache_dtype": "bogus"}
    yield "max-model-len", {"max_model_len": 512}
    yield "max-model-len-big", {"max_model_len": 10**7}
    yield "block-size", {"block_size": 16}
    yield "null-value", {"max_num_seqs": None}
    yield "list-value", {"allowed_origins": ["a", "b"]}
    yield "hf-overrides", {"hf_overrides": {"rope_theta": 10000}}


NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 1}


def spelling_cases(m: dict[str, Path]) -> Iterator[tuple[str, list[str]]]:
    """Every speculative spelling vLLM's parser accepts, on the command line."""
    other = str(m["draft-other"])
    yield "spec-method-tokens", ["--spec-method", "ngram", "--spec-tokens", "3"]
    yield "spec-method-underscore", ["--spec_method", "ngram", "--spec_tokens", "3"]
    yield "spec-method-eq", ["--spec-method=ngram", "--spec-tokens=3"]
    yield "spec-model", ["--spec-model", other, "--spec-tokens", "2"]
    yield "spec-model-method", ["--spec-method", "draft_model", "--spec-model", other, "--spec-tokens", "2"]
    yield "spec-method-plus-json", ["--spec-method", "ngram", "--speculative-config", '{"num_speculative_tokens": 3}']
    yield (
        "spec-method-clash",
        ["--spec-method", "ngram", "--speculative-config", '{"method": "ngram", "num_speculative_tokens": 3}'],
    )
    yield "spec-tokens-bad", ["--spec-method", "ngram", "--spec-tokens", "x"]
    yield "spec-method-bad", ["--spec-method", "bogus", "--spec-tokens", "3"]
    yield "sc-dotted", ["-sc.method", "ngram", "-sc.num_speculative_tokens", "3"]
    yield (
        "underscore-dotted",
        ["--speculative_config.method", "ngram", "--speculative_config.num_speculative_tokens", "3"],
    )
    yield "dotted-eq", ["--speculative-config.method=ngram", "--speculative-config.num_speculative_tokens=3"]
    yield (
        "dotted-kebab-key",
        ["--speculative-config.method", "ngram", "--speculative-config.num-speculative-tokens", "3"],
    )
    yield (
        "dotted-nested",
        [
            "--speculative-config.method",
            "draft_model",
            "--speculative-config.model",
            other,
            "--speculative-config.num_speculative_tokens",
            "2",
            "--speculative-config.draft_load_config.load_format",
            "auto",
        ],
    )
    yield (
        "dotted-append",
        [
            "--speculative-config.method",
            "ngram",
            "--speculative-config.num_speculative_tokens",
            "3",
            "--speculative-config.rejection_sample_method",
            "synthetic",
            "--speculative-config.synthetic_acceptance_rates+",
            "0.9,0.5",
            "--speculative-config.synthetic_acceptance_rates+",
            "0.1",
        ],
    )
    yield (
        "dotted-1k",
        [
            "--speculative-config.method",
            "draft_model",
            "--speculative-config.model",
            other,
            "--speculative-config.num_speculative_tokens",
            "2",
            "--speculative-config.max_model_len",
            "1k",
        ],
    )
    yield (
        "dotted-bare-flag",
        [
            "--speculative-config.method",
            "ngram",
            "--speculative-config.num_speculative_tokens",
            "3",
            "--speculative-config.parallel_drafting",
        ],
    )
    yield (
        "json-then-dotted",
        ["--speculative-config", json.dumps(NGRAM), "--speculative-config.num_speculative_tokens", "2"],
    )
    yield (
        "dotted-then-json",
        ["--speculative-config.num_speculative_tokens", "2", "--speculative-config", json.dumps(NGRAM)],
    )
    yield (
        "json-twice",
        [
            "--speculative-config",
            json.dumps(NGRAM),
            "--speculative-config",
            '{"method": "ngram", "num_speculative_tokens": 2}',
        ],
    )
    yield (
        "sc-and-long",
        ["-sc", json.dumps(NGRAM), "--speculative-config", '{"method": "ngram", "num_speculative_tokens": 2}'],
    )
    yield "sc-dotted-and-long-dotted", ["-sc.method", "ngram", "--speculative-config.num_speculative_tokens", "3"]
    yield "json-empty-string", ["--speculative-config", ""]
    yield "json-null", ["--speculative-config", "null"]
    yield "json-empty", ["--speculative-config", "{}"]
    yield "no-value", ["--speculative-config"]
    yield "batched-tokens-flag", ["--speculative-config", json.dumps(NGRAM), "--max-num-batched-tokens", "4096"]
    yield "batched-tokens-1k", ["--speculative-config", json.dumps(NGRAM), "--max-num-batched-tokens", "4k"]
    yield "max-num-seqs-flag", ["--speculative-config", json.dumps(NGRAM), "--max-num-seqs", "4"]


def all_cases(m: dict[str, Path], workspace: str) -> list[Case]:
    cases: list[Case] = []
    target = str(m["target"])
    base = {"NIM_MODEL_PATH": target, "NIM_CACHE_PATH": workspace.rsplit("/", 1)[0], "NIM_WORKSPACE": workspace}
    n = 0
    for name, spec in payloads(m):
        for form in FORMS:
            delivered = deliver(form, spec)
            if delivered is None:
                continue
            env, cli, direct = delivered
            # env-* forms only apply with NIM_SPECDEC_ENABLE=1; the others alternate between 0 and 1
            enable = "1" if form.startswith("env") or n % 2 else "0"
            n += 1
            cases.append(
                Case(f"{name}/{form}/enable{enable}", {**base, "NIM_SPECDEC_ENABLE": enable, **env}, cli, direct)
            )
    for name, engine in engine_cases():
        args = json.dumps({"speculative_config": NGRAM, **engine})
        direct = ["--speculative-config", json.dumps(NGRAM)]
        for key, value in engine.items():
            direct += to_cli(key.replace("-", "_"), value)
        cases.append(
            Case(f"engine-{name}/env", {**base, "NIM_SPECDEC_ENABLE": "1", "NIM_SPECDEC_ARGS": args}, [], direct)
        )
        tokens = [t for key, value in engine.items() for t in to_cli(key.replace("-", "_"), value)]
        cases.append(
            Case(
                f"engine-{name}/passthrough",
                {
                    **base,
                    "NIM_SPECDEC_ENABLE": "0",
                    "NIM_PASSTHROUGH_ARGS": shlex.join(["-sc", json.dumps(NGRAM), *tokens]),
                },
                [],
                ["-sc", json.dumps(NGRAM), *tokens],
            )
        )
    for name, tokens in spelling_cases(m):
        for enable in ("0", "1"):
            cases.append(
                Case(f"spelling-{name}/enable{enable}", {**base, "NIM_SPECDEC_ENABLE": enable}, tokens, tokens)
            )
    # bare draft names: the launcher links NIM_DRAFT_MODEL_PATH into the workspace under the bare name
    for name, method, draft in (
        ("bare-draft-model", "draft_model", "draft-other"),
        ("bare-eagle3", "eagle3", "draft-eagle3"),
        ("bare-no-method-eagle3", None, "draft-eagle3"),
        ("bare-no-method-other", None, "draft-other"),
    ):
        spec = {"model": "my_draft", "num_speculative_tokens": 2, **({"method": method} if method else {})}
        direct_spec = {**spec, "model": str(m[draft])}
        env = {
            **base,
            "NIM_SPECDEC_ENABLE": "1",
            "NIM_DRAFT_MODEL_PATH": str(m[draft]),
            "NIM_SPECDEC_ARGS": json.dumps({"speculative_config": spec}),
        }
        cases.append(
            Case(
                f"{name}/env",
                env,
                [],
                ["--speculative-config", json.dumps(direct_spec)],
                {f"{workspace}/my_draft": str(m[draft])},
            )
        )
    # a restart with another local draft under the same bare name: the link an earlier start made is the
    # launcher's own, replaced (vLLM is given a path either way)
    spec = {"model": "prev_draft", "method": "draft_model", "num_speculative_tokens": 2}
    cases.append(
        Case(
            "bare-draft-relinked/env",
            {
                **base,
                "NIM_SPECDEC_ENABLE": "1",
                "NIM_DRAFT_MODEL_PATH": str(m["draft-other"]),
                "NIM_SPECDEC_ARGS": json.dumps({"speculative_config": spec}),
            },
            [],
            ["--speculative-config", json.dumps({**spec, "model": str(m["draft-other"])})],
            {f"{workspace}/prev_draft": str(m["draft-other"])},
            {f"{workspace}/prev_draft": str(m["draft-copy"])},
        )
    )
    # a draft with no config at all: the auto choice from NIM_DRAFT_MODEL_PATH alone
    for draft in ("draft-eagle3", "draft-other", "draft-copy"):
        env = {**base, "NIM_SPECDEC_ENABLE": "1", "NIM_DRAFT_MODEL_PATH": str(m[draft])}
        cases.append(
            Case(
                f"auto-draft-{draft}",
                env,
                [],
                ["--speculative-config", json.dumps({"model": str(m[draft]), "num_speculative_tokens": 3})],
                {f"{workspace}/draft": str(m[draft])},
            )
        )
    cases.append(
        Case("auto-ngram", {**base, "NIM_SPECDEC_ENABLE": "1"}, [], ["--speculative-config", json.dumps(NGRAM)])
    )
    cases.append(Case("off", {**base, "NIM_SPECDEC_ENABLE": "0"}, [], []))
    return cases
