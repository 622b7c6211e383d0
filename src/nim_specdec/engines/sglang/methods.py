"""SGLang 0.5's speculative algorithms, one row per method of the guide's vLLM form: the algorithm it becomes,
whether it needs a draft checkpoint, and how the config's K (`num_speculative_tokens`) is written in SGLang's flags.

A method SGLang lacks has no row and is refused (methods.method_row). K is the number of tokens drafted after the
last accepted one, as in vLLM; SGLang counts the verify window instead, one more (the EAGLE family: steps = K,
top-k 1, draft tokens = K + 1, the value SGLang forces for top-k 1; DFLASH: block size = K + 1; DSPARK: gamma = K,
window gamma + 1; NGRAM: a chain of K + 1 nodes, breadth 1, as vLLM's n-gram drafts one chain).
"""

from __future__ import annotations

from dataclasses import dataclass

from nim_specdec.errors import ConfigError

# How K is written: the flags and the value each takes, as a function of K.
K_STEPS = "steps"  # --speculative-num-steps K --speculative-eagle-topk 1 --speculative-num-draft-tokens K+1
K_WINDOW = "window"  # --speculative-num-draft-tokens K+1 (the verify window)
K_GAMMA = "gamma"  # --speculative-dspark-block-size K (SGLang sets the window to K + 1)
K_CHAIN = "chain"  # --speculative-num-draft-tokens K+1 --speculative-ngram-max-bfs-breadth 1 (and min 1)

# Where the draft comes from.
DRAFT_CHECKPOINT = "checkpoint"  # a separate draft: `model` in the config, --speculative-draft-model-path
DRAFT_TARGET = "target"  # the target's own heads (MTP); SGLang finds them in the target's checkpoint
DRAFT_NONE = "none"  # no model at all (n-gram)


@dataclass(frozen=True)
class SglangMethod:
    method: str  # the guide's (vLLM's) method name
    algorithm: str  # SGLang's --speculative-algorithm
    draft: str  # DRAFT_CHECKPOINT, DRAFT_TARGET or DRAFT_NONE
    k_form: str  # K_STEPS, K_WINDOW, K_GAMMA or K_CHAIN
    cpu: bool  # SGLang 0.5's resolver accepts it with --device cpu (DFLASH and DSPARK want CUDA, NPU or XPU)
    note: str  # one line for the docs' mapping table


METHODS: tuple[SglangMethod, ...] = (
    SglangMethod("eagle3", "EAGLE3", DRAFT_CHECKPOINT, K_STEPS, True, "EAGLE-3 draft checkpoint"),
    SglangMethod("eagle", "EAGLE", DRAFT_CHECKPOINT, K_STEPS, True, "EAGLE(-2) draft checkpoint"),
    # EAGLE, not its alias NEXTN: SGLang resolves NEXTN to EAGLE, and DeepSeek-V4's check (run before) takes EAGLE only.
    SglangMethod("mtp", "EAGLE", DRAFT_TARGET, K_STEPS, True, "the target's MTP heads (SGLang's NEXTN is EAGLE)"),
    SglangMethod("ngram", "NGRAM", DRAFT_NONE, K_CHAIN, True, "SGLang's n-gram trie over all requests, one chain"),
    SglangMethod("draft_model", "STANDALONE", DRAFT_CHECKPOINT, K_STEPS, True, "a small model of the same family"),
    SglangMethod("dflash", "DFLASH", DRAFT_CHECKPOINT, K_WINDOW, False, "DFlash block draft; block size K + 1"),
    SglangMethod("dspark", "DSPARK", DRAFT_CHECKPOINT, K_GAMMA, False, "DSpark draft; gamma K"),
)
BY_METHOD = {row.method: row for row in METHODS}
ALIASES = {"NEXTN": "EAGLE"}  # SGLang's own: the algorithm each spelling resolves to


def same_algorithm(a: str, b: str) -> bool:
    """Whether two --speculative-algorithm values name one algorithm for SGLang (any case, NEXTN is EAGLE)."""
    return ALIASES.get(a.upper(), a.upper()) == ALIASES.get(b.upper(), b.upper())


def method_row(method: object, where: str = "speculative_config.method") -> SglangMethod:
    """The row of a vLLM-form method; a method SGLang 0.5 lacks (suffix, medusa, mlp_speculator, ...) refused."""
    row = BY_METHOD.get(method) if isinstance(method, str) else None
    if row is None:
        raise ConfigError(
            where,
            f"method {method!r} has no SGLang 0.5 counterpart",
            f"use one of: {', '.join(BY_METHOD)}, or NIM_ENGINE=vllm",
        )
    return row


def k_flags(row: SglangMethod, k: int) -> tuple[tuple[str, str], ...]:
    """K written as SGLang's flags for the row's algorithm, as (option, value) pairs."""
    if row.k_form == K_STEPS:
        return (
            ("--speculative-num-steps", str(k)),
            ("--speculative-eagle-topk", "1"),
            ("--speculative-num-draft-tokens", str(k + 1)),
        )
    if row.k_form == K_WINDOW:
        return (("--speculative-num-draft-tokens", str(k + 1)),)
    if row.k_form == K_GAMMA:
        return (("--speculative-dspark-block-size", str(k)),)
    return (
        ("--speculative-num-draft-tokens", str(k + 1)),
        ("--speculative-ngram-min-bfs-breadth", "1"),
        ("--speculative-ngram-max-bfs-breadth", "1"),
    )
