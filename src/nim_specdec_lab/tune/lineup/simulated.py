"""Acceptance curves of the model-free methods from recorded greedy token ids, through the exact simulators."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from nim_specdec_lab.ngram.corpus import RecordedRequest, build_corpus
from nim_specdec_lab.ngram.grid import DEFAULT_VERIFY_COST, make_grid, rank
from nim_specdec_lab.ngram.simulator import NgramParams, simulate
from nim_specdec_lab.ngram.simulator_v2 import simulate_v2
from nim_specdec_lab.suffix.simulator import SuffixParams, simulate_suffix
from nim_specdec_lab.tune.lineup import candidates as cand
from nim_specdec_lab.tune.model.acceptance import AcceptanceCurve, curve_from_simulation

# speculative_config key -> SuffixParams field
SUFFIX_KEYS = {
    "suffix_decoding_max_tree_depth": "max_tree_depth",
    "suffix_decoding_max_cached_requests": "max_cached_requests",
    "suffix_decoding_max_spec_factor": "max_spec_factor",
    "suffix_decoding_min_token_prob": "min_token_prob",
}

LOOKUP_MIN = (1, 2, 3)
LOOKUP_MAX = (1, 2, 3, 4, 5)
NO_LIMIT = 1 << 40


def _ngram_simulation(records: Sequence[RecordedRequest], max_ngram: int, kmax: int, model_runner: str):
    """The corpus and simulation of the n-gram drafter of `model_runner` ("v1" or "v2")."""
    occurrence = "last" if model_runner == "v2" else "first"
    corpus = build_corpus(records, max_ngram=max_ngram, pad=kmax + 1, occurrence=occurrence)
    return corpus, simulate_v2 if model_runner == "v2" else simulate


def ngram_curve(
    records: Sequence[RecordedRequest],
    kmax: int,
    lookup_min: int,
    lookup_max: int,
    max_model_len: int | None,
    model_runner: str = "v1",
) -> AcceptanceCurve:
    corpus, run = _ngram_simulation(records, lookup_max, kmax, model_runner)
    runs = []
    for k in range(1, kmax + 1):
        result = run(corpus, NgramParams(k, lookup_min, lookup_max), max_model_len or NO_LIMIT)
        runs.append((k, corpus.output_tokens, result.accepted, result.draft_tokens))
    return curve_from_simulation(runs, model_runner)


def pick_ngram_lookup(
    records: Sequence[RecordedRequest], kmax: int, max_model_len: int | None, model_runner: str = "v1"
) -> tuple[int, int]:
    """(prompt_lookup_min, prompt_lookup_max) that tune-ngram's ranking puts first at K = kmax."""
    grid = make_grid([kmax], LOOKUP_MIN, LOOKUP_MAX)
    corpus, run = _ngram_simulation(records, max(p.max_n for p in grid), kmax, model_runner)
    best = rank([run(corpus, p, max_model_len or NO_LIMIT) for p in grid], DEFAULT_VERIFY_COST)[0].result.params
    return best.min_n, best.max_n


def suffix_curve(
    records: Sequence[RecordedRequest], config: Mapping[str, Any], max_model_len: int | None
) -> AcceptanceCurve:
    """Suffix decoding as the measured server runs it: the replay sends every captured request more than
    once, so its global tree already holds each answer (`history`); new traffic accepts less."""
    keys = {field: config[key] for key, field in SUFFIX_KEYS.items() if config.get(key) is not None}
    total = sum(len(r.output) for r in records)
    runs = []
    for k in range(1, int(config["num_speculative_tokens"]) + 1):
        result = simulate_suffix(records, SuffixParams(k=k, **keys), max_model_len, history=records)
        runs.append((k, total, result.accepted, result.draft_tokens))
    return curve_from_simulation(runs)


def model_free_candidates(
    records: Sequence[RecordedRequest],
    methods: Sequence[str],
    max_k: int,
    configured: cand.Candidate | None,
    max_len: int | None,
    ngram_runner: str = "v1",
) -> tuple[list[cand.Candidate], dict[str, AcceptanceCurve]]:
    """The model-free candidates of `methods` and their simulated acceptance curves (n-gram's as
    `ngram_runner` drafts); a model-free method the user configured is taken in the user's form."""
    found, curves = [], {}
    if "ngram" in methods:
        if configured is not None and configured.method == "ngram":
            ngram = configured
        else:
            lo, hi = pick_ngram_lookup(records, max_k, max_len, ngram_runner)
            ngram = cand.Candidate("ngram", cand.ngram_config(max_k, lo, hi), configured=False)
        found.append(ngram)
        curves["ngram"] = ngram_curve(
            records,
            ngram.kmax,
            int(ngram.config.get("prompt_lookup_min") or 1),
            int(ngram.config["prompt_lookup_max"]),
            max_len,
            ngram_runner,
        )
    if "suffix" in methods:
        suffix = (
            configured
            if configured is not None and configured.method == "suffix"
            else cand.Candidate("suffix", cand.suffix_config(max_k), configured=False)
        )
        found.append(suffix)
        curves["suffix"] = suffix_curve(records, suffix.config, max_len)
    return found, curves
