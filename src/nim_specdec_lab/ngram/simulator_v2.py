"""Exact, vectorized simulation of vLLM's V2 model runner with method "ngram" (see `proposer_v2.py`).

Same scheme as `simulator.py`: every step position gets its draft and accepted length at once
from the corpus tables (built with `occurrence="last"`: V2 drafts after the rightmost
occurrence), then a request's steps are found by pointer doubling. V2 drafts k tokens at every
step, the last sampled token standing in where the n-gram has nothing, and has no zero-draft
path near the model length, so each position is one node.
"""

from __future__ import annotations

import numpy as np

from nim_specdec_lab.ngram.corpus import Corpus
from nim_specdec_lab.ngram.simulator import NgramParams, SimResult, chain_members, collect


def draft_lengths_and_hits_v2(corpus: Corpus, params: NgramParams, max_model_len: int) -> tuple[np.ndarray, np.ndarray]:
    """Draft tokens verified and accepted at every step position."""
    if corpus.occurrence != "last":
        raise ValueError("the V2 proposer takes the rightmost occurrence: build the corpus with occurrence='last'")
    if params.max_n > corpus.max_ngram:
        raise ValueError(f"prompt_lookup_max {params.max_n} exceeds the corpus tables ({corpus.max_ngram})")
    tokens = corpus.tokens
    pos = corpus.query_pos
    if params.k > tokens.shape[0] - (int(pos.max()) + 1 if pos.size else 0):
        raise ValueError("corpus padding is shorter than k")
    n = np.minimum(corpus.longest, params.max_n)
    found = n >= params.min_n
    start = corpus.draft_start[np.maximum(n, 1) - 1, np.arange(corpus.num_queries)]
    # Tokens the match supplies before the context ends; 0 without a match.
    avail = np.where(found, pos - start, 0)
    start = np.where(found, start, 0)
    last = tokens[pos - 1]
    # The scheduler keeps the verified positions inside the model length.
    length = np.clip(np.minimum(params.k, max_model_len - corpus.query_ctx_len - 1), 0, None)
    hits = np.zeros_like(length)
    alive = length > 0
    for i in range(params.k):
        draft = np.where(i < avail, tokens[start + i], last)
        alive &= (i < length) & (pos + i < corpus.query_stream_end) & (draft == tokens[pos + i])
        hits += alive
    return length, hits


def simulate_v2(corpus: Corpus, params: NgramParams, max_model_len: int = 1 << 40) -> SimResult:
    """Predicted counters of a V2 model runner serving `params`, over all recorded requests."""
    q = corpus.num_queries
    length, hits = draft_lengths_and_hits_v2(corpus, params, max_model_len)
    position = np.arange(q, dtype=np.int64) + np.where(length > 0, hits + 1, 1)
    terminal = q
    nxt = np.append(np.where(position < corpus.query_next_limit, position, terminal), terminal)
    visited = chain_members(nxt, corpus.first_queries.astype(np.int64), terminal)
    return collect(params, visited, length, hits, corpus.query_request, corpus, "v2")
