"""The reference proposer against the proposer function of the installed vLLM itself."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from nim_specdec.tools.ngram.reference import propose


@settings(max_examples=3000, deadline=None)
@given(
    st.integers(min_value=1, max_value=5).flatmap(
        lambda vocab: st.lists(st.integers(min_value=0, max_value=vocab - 1), max_size=40)
    ),
    st.integers(min_value=1, max_value=5),
    st.integers(min_value=0, max_value=4),
    st.integers(min_value=1, max_value=8),
    st.one_of(st.just(1 << 20), st.integers(min_value=1, max_value=45)),
)
def test_reference_proposals_equal_vllm(context, min_n, extra, k, max_model_len):
    from vllm.v1.spec_decode.ngram_proposer import _find_longest_matched_ngram_and_propose_tokens as vllm_propose

    max_n = min_n + extra
    expected = vllm_propose(np.array(context, dtype=np.int32), min_n, max_n, max_model_len, k).tolist()
    assert propose(context, min_n, max_n, k, max_model_len) == expected
