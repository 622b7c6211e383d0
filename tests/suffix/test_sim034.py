"""The suffix simulator's v034 mode on its own (its agreement with vLLM 0.34's kernels: test_gpu034_kernels.py, in
Triton's interpreter): fixed-length drafts, the corpus of finished responses and what turns it off."""

from __future__ import annotations

import pytest

from nim_specdec_lab.ngram.corpus import RecordedRequest
from nim_specdec_lab.suffix.gpu034 import Corpus, local_draft, propose
from nim_specdec_lab.suffix.sim034 import Suffix034Params, simulate_suffix_034

ANSWER = [40, 41, 42, 43, 44, 45, 46, 47]


def test_own_history_takes_the_longest_then_latest_match_and_fills_with_the_last_token():
    row = [5, 6, 7, 8, 5, 6, 7, 9, 5, 6, 7]
    assert local_draft(row, 24, 3) == (3, [9, 5, 6])  # the latest of two equally long matches
    assert propose([1, 2, 3], None, 24, 4) == [3, 3, 3, 3]  # no match: k fillers, the last sampled token


def test_a_finished_answer_drafts_the_next_request_from_the_corpus():
    first, second = RecordedRequest.of([1, 2], ANSWER), RecordedRequest.of([3, 1, 2], ANSWER)
    with_corpus = simulate_suffix_034([first, second], Suffix034Params(k=4))
    without = simulate_suffix_034([first, second], Suffix034Params(k=4, corpus_tokens=0))
    assert with_corpus.per_request[0].tolist() == without.per_request[0].tolist()
    assert with_corpus.per_request[1][2] > without.per_request[1][2]  # the second answer is drafted from the first
    assert with_corpus.draft_tokens == with_corpus.drafts * 4 and with_corpus.model_runner == "v2"
    cached_none = simulate_suffix_034([first, second], Suffix034Params(k=4, max_cached_requests=0))
    assert cached_none.per_request.tolist() == without.per_request.tolist()


def test_the_ring_overwrites_the_oldest_answer():
    corpus = Corpus(12)
    corpus.ingest([9, 9, 9, 1, 2, 3, 4], 3)  # tokens 9 9 9 1 2 3 4 then a separator: 8 of 12
    corpus.ingest([8, 8, 8, 5, 6], 3)  # 6 more do not fit: written from 0
    assert corpus.tokens[:6] == [8, 8, 8, 5, 6, -1] and corpus.head == 6
    assert corpus.draft([9, 1, 2], 24, 2) == (0, [])  # the first answer's index entries point at new tokens


@pytest.mark.parametrize("bad", [{"k": 0}, {"k": 1, "corpus_tokens": 1 << 31}, {"k": 1, "max_tree_depth": 0}])
def test_settings_vllm_refuses_are_refused(bad):
    with pytest.raises(ValueError):
        Suffix034Params(**bad)
