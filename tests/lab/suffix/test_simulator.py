"""The suffix simulator's invariants on arbitrary traffic, and the behaviours of vLLM's proposer it models."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nim_specdec_lab.ngram.corpus import RecordedRequest
from nim_specdec_lab.suffix.simulator import SuffixParams, simulate_suffix

tokens = st.lists(st.integers(1, 6), min_size=1, max_size=40)
request = st.builds(
    lambda p, o, t: RecordedRequest.of(p, o, t), tokens, tokens, st.lists(st.integers(1, 6), max_size=9)
)
params = st.builds(
    SuffixParams,
    st.integers(1, 8),
    st.integers(1, 12),
    st.sampled_from([0, 1, 3, 10000]),
    st.sampled_from([0.0, 0.5, 1.0, 2.0]),
    st.sampled_from([0.0, 0.1, 0.5, 1.0]),
)


@settings(max_examples=150, deadline=None)
@given(records=st.lists(request, min_size=1, max_size=5), p=params, max_len=st.one_of(st.none(), st.integers(8, 90)))
def test_counts_are_consistent(records, p, max_len):
    result = simulate_suffix(records, p, max_len)
    assert result.per_request.sum(axis=0).tolist() == [result.drafts, result.draft_tokens, result.accepted]
    assert result.drafts <= result.draft_tokens <= p.k * result.drafts
    assert result.accepted <= result.draft_tokens
    # Position i counts the drafts that got more than i tokens accepted.
    assert sum(result.accepted_per_pos) == result.accepted
    assert list(result.accepted_per_pos) == sorted(result.accepted_per_pos, reverse=True)
    # Every step emits accepted + 1 tokens; the last one may run past the end.
    assert result.steps + result.accepted >= result.baseline_steps
    assert result.steps <= result.baseline_steps


@settings(max_examples=60, deadline=None)
@given(records=st.lists(request, min_size=2, max_size=5), k=st.integers(1, 8))
def test_without_a_global_tree_requests_do_not_influence_each_other(records, k):
    p = SuffixParams(k, max_cached_requests=0)
    together = simulate_suffix(records, p).per_request.tolist()
    alone = [simulate_suffix([r], p).per_request[0].tolist() for r in records]
    assert together == alone


def test_an_earlier_response_is_drafted_from_the_global_tree():
    story = list(range(10, 40))
    first = RecordedRequest.of([1, 2, 3], story, story[:2])
    again = RecordedRequest.of([4, 5, 6], story, story[:2])
    cached = simulate_suffix([first, again], SuffixParams(8, max_cached_requests=10))
    uncached = simulate_suffix([first, again], SuffixParams(8, max_cached_requests=0))
    # Nothing in the second prompt predicts the story: only the first response can.
    assert uncached.per_request[1].tolist() == [0, 0, 0]
    drafts, draft_tokens, accepted = cached.per_request[1].tolist()
    assert drafts > 0 and accepted == draft_tokens
    # The first request's own response feeds its later steps in both settings alike.
    assert cached.per_request[0].tolist() == uncached.per_request[0].tolist()


def test_the_global_tree_evicts_the_oldest_response():
    a, b = list(range(100, 130)), list(range(200, 230))
    records = [RecordedRequest.of([1], a, a[:2]), RecordedRequest.of([2], b, b[:2]), RecordedRequest.of([3], a, a[:2])]
    # The third request takes a slot of its own when it starts: with room for three, a stays.
    keeps_three = simulate_suffix(records, SuffixParams(8, max_cached_requests=3)).per_request[2].tolist()
    keeps_two = simulate_suffix(records, SuffixParams(8, max_cached_requests=2)).per_request[2].tolist()
    assert keeps_three[2] > 0
    assert keeps_two == [0, 0, 0]  # first in, first out: a went when the third request arrived


def test_drafts_past_the_model_length_become_zeros():
    """A step whose sequence plus k positions does not fit is not drafted by the proposer: vLLM
    schedules k zeros instead, cut to the model length, and a zero that matches is accepted."""
    record = RecordedRequest.of([7, 8, 9, 7, 8], [9, 3, 0, 4])
    far = simulate_suffix([record], SuffixParams(2), max_model_len=100)
    near = simulate_suffix([record], SuffixParams(2), max_model_len=9)
    # Both: after the prefill the prompt tree drafts what followed 9 before (7, 8), which misses.
    # Far from the limit nothing predicts 3 or 0 after that: no further draft.
    assert far.drafts == 1 and far.accepted == 0
    # Near it, the next step (6 + 2 drafted + k 2 > 9) gets zeros instead, cut to 9 - 7 - 1 = 1
    # position, and the target's next token is 0.
    assert near.drafts == 2 and near.accepted == 1 and near.accepted_per_pos == (1, 0)
    assert near.draft_tokens == far.draft_tokens + 1


@pytest.mark.parametrize(
    "bad",
    [
        dict(k=0),
        dict(k=1, max_tree_depth=0),
        dict(k=1, max_cached_requests=-1),
        dict(k=1, max_spec_factor=-1.0),
        dict(k=1, min_token_prob=1.5),
    ],
)
def test_invalid_settings_are_refused(bad):
    with pytest.raises(ValueError):
        SuffixParams(**bad)
