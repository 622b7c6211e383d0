"""Acceptance curves of the model-free methods from recorded greedy token ids, through the exact simulators."""

from __future__ import annotations

from typing import Sequence

from nim_specdec.tools.ngram.corpus import RecordedRequest, build_corpus
from nim_specdec.tools.ngram.grid import DEFAULT_VERIFY_COST, make_grid, rank
from nim_specdec.tools.ngram.simulator import NgramParams, simulate
from nim_specdec.tools.tune.acceptance import AcceptanceCurve, curve_from_simulation

LOOKUP_MIN = (1, 2, 3)
LOOKUP_MAX = (1, 2, 3, 4, 5)
NO_LIMIT = 1 << 40


def ngram_curve(records: Sequence[RecordedRequest], kmax: int, lookup_min: int, lookup_max: int,
                max_model_len: int | None) -> AcceptanceCurve:
    corpus = build_corpus(records, max_ngram=lookup_max, pad=kmax + 1)
    runs = []
    for k in range(1, kmax + 1):
        result = simulate(corpus, NgramParams(k, lookup_min, lookup_max), max_model_len or NO_LIMIT)
        runs.append((k, corpus.output_tokens, result.accepted, result.draft_tokens))
    return curve_from_simulation(runs)


def pick_ngram_lookup(records: Sequence[RecordedRequest], kmax: int, max_model_len: int | None) -> tuple[int, int]:
    """(prompt_lookup_min, prompt_lookup_max) that tune-ngram's ranking puts first at K = kmax."""
    grid = make_grid([kmax], LOOKUP_MIN, LOOKUP_MAX)
    corpus = build_corpus(records, max_ngram=max(p.max_n for p in grid), pad=kmax + 1)
    best = rank([simulate(corpus, p, max_model_len or NO_LIMIT) for p in grid], DEFAULT_VERIFY_COST)[0].result.params
    return best.min_n, best.max_n
