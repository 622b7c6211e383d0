"""The reference proposer against the proposer function of the installed vLLM itself."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from nim_specdec_lab.ngram.reference import propose


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


@settings(max_examples=500, deadline=None)
@given(
    st.integers(min_value=0, max_value=300),
    st.integers(min_value=1, max_value=12),
    st.integers(min_value=1, max_value=300),
)
def test_drafter_rule_equals_vllm_model_runner(seq_len, k, max_model_len):
    """Near the model length vLLM replaces the draft with zeros; the reference asks the same question."""
    from types import SimpleNamespace

    from vllm.v1.worker.gpu_model_runner import GPUModelRunner

    from nim_specdec_lab.ngram.reference import drafter_runs_after

    runner = SimpleNamespace(
        num_spec_tokens=k,
        speculative_config=SimpleNamespace(use_dflash=lambda: False),
        effective_drafter_max_model_len=max_model_len,
    )
    fits = GPUModelRunner._input_fits_in_drafter(runner, SimpleNamespace(max_seq_len=seq_len))
    assert drafter_runs_after(seq_len, k, max_model_len) == fits


def test_zero_drafts_near_the_model_length():
    """No n-gram ever matches (all tokens distinct), so every draft here is one of vLLM's zero drafts.

    k=5, model length 40, prompt 10: the pass at context 36 (no draft) has sequence length 36 and
    36 + 5 > 40, so the steps at contexts 37 and 38 draft zeros trimmed to the room left (2 and 1
    tokens), and the step at 39 has no room for a draft.
    """
    from nim_specdec_lab.ngram.corpus import RecordedRequest, build_corpus
    from nim_specdec_lab.ngram.reference import simulate_request
    from nim_specdec_lab.ngram.simulator import NgramParams, simulate

    prompt, output = list(range(1, 11)), list(range(11, 41))
    ref = simulate_request(prompt, output, [], 5, 1, 3, 40)
    assert (ref.drafts, ref.draft_tokens, ref.accepted, ref.zero_drafts) == (2, 3, 0, 2)
    sim = simulate(build_corpus([RecordedRequest.of(prompt, output)], max_ngram=3), NgramParams(5, 1, 3), 40)
    assert tuple(sim.per_request[0]) == (2, 3, 0)
    # A true continuation of zeros is accepted like any other token.
    zeros = output[:-4] + [0, 0, 0, 0]
    ref0 = simulate_request(prompt, zeros, [], 5, 1, 3, 40)
    sim0 = simulate(build_corpus([RecordedRequest.of(prompt, zeros)], max_ngram=3), NgramParams(5, 1, 3), 40)
    assert ref0.accepted > 0 and tuple(sim0.per_request[0]) == (ref0.drafts, ref0.draft_tokens, ref0.accepted)
