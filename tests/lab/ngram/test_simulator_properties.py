"""The vectorized simulator against the literal reference, on random token streams."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from nim_specdec_lab.ngram.corpus import RecordedRequest, build_corpus
from nim_specdec_lab.ngram.reference import simulate_request
from nim_specdec_lab.ngram.simulator import NgramParams, simulate

# Small vocabularies make repeats, and so drafts and partial acceptances, frequent.
streams = st.integers(min_value=1, max_value=6).flatmap(
    lambda vocab: st.lists(st.integers(min_value=0, max_value=vocab - 1), max_size=40)
)
requests = st.builds(
    RecordedRequest.of,
    streams,
    streams,
    st.lists(st.integers(min_value=0, max_value=5), max_size=8),
)
settings_strategy = st.tuples(
    st.integers(min_value=1, max_value=7),
    st.integers(min_value=1, max_value=4),
    st.integers(min_value=0, max_value=3),
).map(lambda t: NgramParams(k=t[0], min_n=t[1], max_n=t[1] + t[2]))
model_lens = st.one_of(st.just(1 << 30), st.integers(min_value=1, max_value=90))


@settings(max_examples=400, deadline=None)
@given(st.lists(requests, min_size=1, max_size=5), settings_strategy, model_lens)
def test_per_request_counts_equal_the_reference(trace, params, max_model_len):
    corpus = build_corpus(trace, max_ngram=7)
    result = simulate(corpus, params, max_model_len)
    for index, req in enumerate(trace):
        ref = simulate_request(req.prompt, req.output, req.tail, params.k, params.min_n, params.max_n, max_model_len)
        assert tuple(result.per_request[index]) == (ref.drafts, ref.draft_tokens, ref.accepted), req


@settings(max_examples=200, deadline=None)
@given(st.lists(requests, min_size=1, max_size=4), settings_strategy)
def test_totals_steps_and_positions_equal_the_reference(trace, params):
    result = simulate(build_corpus(trace, max_ngram=params.max_n), params)
    refs = [simulate_request(r.prompt, r.output, r.tail, params.k, params.min_n, params.max_n, 1 << 30) for r in trace]
    assert result.drafts == sum(r.drafts for r in refs)
    assert result.draft_tokens == sum(r.draft_tokens for r in refs)
    assert result.accepted == sum(r.accepted for r in refs)
    assert result.steps == sum(r.steps for r in refs)
    assert result.accepted_per_pos == tuple(sum(r.accepted_per_pos[i] for r in refs) for i in range(params.k))
    assert result.baseline_steps == sum(max(len(r.output) - 1, 0) for r in trace)


@settings(max_examples=150, deadline=None)
@given(st.lists(requests, min_size=2, max_size=4), settings_strategy)
def test_requests_do_not_see_each_other(trace, params):
    together = simulate(build_corpus(trace, max_ngram=7), params)
    for index, req in enumerate(trace):
        alone = simulate(build_corpus([req], max_ngram=7), params)
        assert tuple(together.per_request[index]) == tuple(alone.per_request[0])


def test_a_repeated_phrase_is_drafted_and_accepted():
    phrase = [5, 6, 7, 8, 9]
    req = RecordedRequest.of(prompt=[1] + phrase + [2], output=[3] + phrase + [4, 4], tail=[4, 4, 4])
    result = simulate(build_corpus([req], max_ngram=3), NgramParams(k=3, min_n=2, max_n=3))
    ref = simulate_request(req.prompt, req.output, req.tail, 3, 2, 3, 1 << 30)
    assert (result.drafts, result.draft_tokens, result.accepted) == (ref.drafts, ref.draft_tokens, ref.accepted)
    assert result.accepted > 0


def test_empty_and_one_token_outputs_have_no_steps():
    trace = [RecordedRequest.of([1, 2, 1, 2], []), RecordedRequest.of([1, 2, 1, 2], [1])]
    result = simulate(build_corpus(trace, max_ngram=2), NgramParams(3, 1, 2))
    assert (result.drafts, result.steps, result.baseline_steps) == (0, 0, 0)
