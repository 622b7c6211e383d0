"""Acceptance curves of n-gram from recorded token ids: the exact simulator's counts at every K."""

from __future__ import annotations

from nim_specdec.tools.ngram.corpus import RecordedRequest, build_corpus
from nim_specdec.tools.ngram.simulator import NgramParams, simulate
from nim_specdec.tools.tune.acceptance import slot_figures
from nim_specdec.tools.tune.simulated import ngram_curve, pick_ngram_lookup

CYCLE = [7, 8, 9, 10]
RECORDS = [
    RecordedRequest.of([1, 2, 7, 8, 9], (CYCLE * 6)[:20], CYCLE[:4]),  # output repeats: n-gram accepts
    RecordedRequest.of([3, 4, 5, 6], [11, 12, 13, 14, 15, 16, 17, 18], [19, 20, 21, 22]),  # never repeats
]


def test_the_curve_is_the_simulator_at_every_k():
    curve = ngram_curve(RECORDS, kmax=3, lookup_min=1, lookup_max=3, max_model_len=None)
    corpus = build_corpus(RECORDS, max_ngram=3, pad=4)
    assert curve.kmax == 3 and curve.at(0).tokens_per_slot == 1.0
    for k in (1, 2, 3):
        sim = simulate(corpus, NgramParams(k, 1, 3))
        expected = slot_figures(corpus.output_tokens, sim.accepted, sim.draft_tokens)
        assert (curve.at(k).tokens_per_slot, curve.at(k).draft_tokens_per_slot) == expected
    # A repeating output gains more tokens per step as K grows.
    assert curve.at(1).tokens_per_slot < curve.at(3).tokens_per_slot


def test_lookup_lengths_come_from_the_grid():
    lo, hi = pick_ngram_lookup(RECORDS, kmax=3, max_model_len=None)
    assert 1 <= lo <= hi <= 5
