"""The vectorized V2 simulation against the literal V2 model (proposer_v2.py), on random token streams."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nim_specdec_lab.ngram.corpus import RecordedRequest, build_corpus
from nim_specdec_lab.ngram.proposer_v2 import propose_v2, simulate_request_v2
from nim_specdec_lab.ngram.simulator import NgramParams, simulate
from nim_specdec_lab.ngram.simulator_v2 import simulate_v2

streams = st.integers(min_value=1, max_value=6).flatmap(
    lambda vocab: st.lists(st.integers(min_value=0, max_value=vocab - 1), max_size=40)
)
requests = st.builds(
    RecordedRequest.of,
    streams.filter(bool),  # vLLM needs a prompt token; the drafter's fill is the last sampled token
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
def test_counters_equal_the_literal_model(trace, params, max_model_len):
    result = simulate_v2(build_corpus(trace, max_ngram=7, pad=params.k + 1, occurrence="last"), params, max_model_len)
    refs = [
        simulate_request_v2(r.prompt, r.output, r.tail, params.k, params.min_n, params.max_n, max_model_len)
        for r in trace
    ]
    for index, ref in enumerate(refs):
        assert tuple(result.per_request[index]) == (ref.drafts, ref.draft_tokens, ref.accepted), trace[index]
    assert result.steps == sum(r.steps for r in refs)
    assert result.accepted_per_pos == tuple(sum(r.accepted_per_pos[i] for r in refs) for i in range(params.k))
    assert result.model_runner == "v2"


@settings(max_examples=300, deadline=None)
@given(streams.filter(bool), settings_strategy)
def test_always_k_tokens_and_the_last_token_fills(context, params):
    draft = propose_v2(context, params.min_n, params.max_n, params.k)
    assert len(draft) == params.k
    # Without any earlier occurrence of the last token nothing matches: every slot is the last token.
    if context[-1] not in context[:-1]:
        assert draft == [context[-1]] * params.k


def test_each_simulation_needs_its_occurrence_table():
    trace = [RecordedRequest.of([1, 2, 1], [2, 1, 2])]
    with pytest.raises(ValueError, match="occurrence='last'"):
        simulate_v2(build_corpus(trace, 2), NgramParams(1, 1, 2))
    with pytest.raises(ValueError, match="occurrence='first'"):
        simulate(build_corpus(trace, 2, occurrence="last"), NgramParams(1, 1, 2))
    with pytest.raises(ValueError, match="occurrence"):
        build_corpus(trace, 2, occurrence="middle")
