"""Exact, vectorized simulation of vLLM's n-gram speculative decoding over recorded greedy requests.

For one setting (k, min, max) every step position gets its draft and its accepted length at
once, with array operations (see `corpus.py` for the shared occurrence tables). A request's
steps then form a chain: position T jumps to T + accepted + 1 (or T + 1 without a draft).
The positions on the chains are found by pointer doubling, so no Python loop runs per
token or per step. `reference.py` holds the literal specification this must agree with.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from nim_specdec_lab.ngram.corpus import Corpus, RecordedRequest


@dataclass(frozen=True)
class NgramParams:
    """vLLM's speculative config for method "ngram"."""

    k: int  # num_speculative_tokens
    min_n: int  # prompt_lookup_min
    max_n: int  # prompt_lookup_max

    def __post_init__(self) -> None:
        if self.k < 1 or self.min_n < 1 or self.max_n < self.min_n:
            raise ValueError(f"invalid n-gram setting {self}: need k >= 1 and 1 <= min <= max")


@dataclass(frozen=True)
class SimResult:
    """Predicted counters of one setting; the suffix simulator returns the same type."""

    params: Any  # NgramParams, or SuffixParams for method "suffix"
    drafts: int
    draft_tokens: int
    accepted: int
    accepted_per_pos: tuple[int, ...]
    steps: int  # decode forward passes after the prefill, drafting or not
    baseline_steps: int  # the same without speculation: output tokens - 1 per request
    per_request: np.ndarray  # [request, (drafts, draft_tokens, accepted)]
    model_runner: str = "v1"  # the vLLM model runner whose drafter and loop were simulated

    @property
    def acceptance_rate(self) -> float:
        return self.accepted / self.draft_tokens if self.draft_tokens else 0.0

    @property
    def acceptance_length(self) -> float:
        """Mean tokens emitted per drafting step: 1 + accepted / drafts (the guide's AL)."""
        return 1.0 + self.accepted / self.drafts if self.drafts else 1.0


def _draft_lengths_and_hits(corpus: Corpus, params: NgramParams, max_model_len: int) -> tuple[np.ndarray, np.ndarray]:
    if params.max_n > corpus.max_ngram:
        raise ValueError(f"prompt_lookup_max {params.max_n} exceeds the corpus tables ({corpus.max_ngram})")
    n = np.minimum(corpus.longest, params.max_n)
    found = n >= params.min_n
    start = corpus.draft_start[np.maximum(n, 1) - 1, np.arange(corpus.num_queries)]
    start = np.where(found, start, 0)
    pos, ctx = corpus.query_pos, corpus.query_ctx_len
    # Proposer: up to k tokens, cut at the context's end; scheduler: keep verified positions
    # inside the model length.
    length = np.minimum(np.minimum(params.k, max_model_len - ctx - 1), pos - start)
    length = np.where(found, np.maximum(length, 0), 0)
    tokens = corpus.tokens
    if params.k > tokens.shape[0] - (int(pos.max()) + 1 if pos.size else 0):
        raise ValueError("corpus padding is shorter than k")
    hits = np.zeros_like(length)
    alive = length > 0
    for i in range(params.k):
        alive &= (i < length) & (pos + i < corpus.query_stream_end) & (tokens[start + i] == tokens[pos + i])
        hits += alive
    return length, hits


def chain_members(nxt: np.ndarray, heads: np.ndarray, terminal: int) -> np.ndarray:
    """All nodes reached from `heads` by following `nxt` until `terminal` (each chain disjoint)."""
    jumps = [nxt]
    while True:
        last = jumps[-1]
        if np.all(last[heads] == terminal):
            break
        jumps.append(last[last])
    members = heads[heads != terminal]
    # Levels from the longest jump down: after level j the set holds the first 2^(levels-j) nodes.
    for table in reversed(jumps[:-1]):
        reached = table[members]
        members = np.concatenate((members, reached[reached != terminal]))
    return members


def requests_near_model_length(requests: Sequence[RecordedRequest], k: int, max_model_len: int) -> int:
    """How many requests come within k tokens of the model length, where vLLM drafts zeros.

    One request at a time the simulation is exact there. With several in flight vLLM decides by
    the longest sequence of the whole batch, so such a request also turns the other requests'
    drafts into zeros for those steps: the prediction is then optimistic.
    """
    return sum(len(r.prompt) + len(r.output) + k > max_model_len for r in requests)


def _zero_drafts(corpus: Corpus, params: NgramParams, max_model_len: int) -> tuple[np.ndarray, np.ndarray]:
    """Draft length and hits at every step position if the drafter did not run: k zeros, trimmed."""
    pos, ctx = corpus.query_pos, corpus.query_ctx_len
    length = np.clip(np.minimum(params.k, max_model_len - ctx - 1), 0, None)
    hits = np.zeros_like(length)
    alive = length > 0
    tokens = corpus.tokens
    for i in range(params.k):
        alive &= (i < length) & (pos + i < corpus.query_stream_end) & (tokens[pos + i] == 0)
        hits += alive
    return length, hits


def simulate(corpus: Corpus, params: NgramParams, max_model_len: int = 1 << 40) -> SimResult:
    """Predicted counters of the server for `params` over all recorded requests.

    A step is a node (position, whether the drafter ran before it): nodes 0..q-1 carry n-gram
    drafts, nodes q..2q-1 the zero drafts vLLM schedules near the model length (see reference.py).
    Which kind the next step is follows from this step's sequence length, so it is part of the jump.
    """
    if corpus.occurrence != "first":
        raise ValueError("the V1 proposer takes the first occurrence: build the corpus with occurrence='first'")
    q = corpus.num_queries
    ngram_len, ngram_hits = _draft_lengths_and_hits(corpus, params, max_model_len)
    zero_len, zero_hits = _zero_drafts(corpus, params, max_model_len)
    length = np.concatenate((ngram_len, zero_len))
    hits = np.concatenate((ngram_hits, zero_hits))
    drafted = length > 0
    advance = np.where(drafted, hits + 1, 1)
    ctx = np.concatenate((corpus.query_ctx_len, corpus.query_ctx_len))
    limit = np.concatenate((corpus.query_next_limit, corpus.query_next_limit))
    position = np.concatenate((np.arange(q, dtype=np.int64), np.arange(q, dtype=np.int64))) + advance
    next_is_zero = ctx + length + params.k > max_model_len
    terminal = 2 * q
    nxt = np.where(position < limit, position + np.where(next_is_zero, q, 0), terminal)
    nxt = np.append(nxt, terminal)
    heads = corpus.first_queries.astype(np.int64)
    # After the prefill the sequence is the prompt: context of the first step minus one.
    heads = heads + np.where(corpus.query_ctx_len[heads] - 1 + params.k > max_model_len, q, 0)
    visited = chain_members(nxt, heads, terminal)
    return collect(params, visited, length, hits, np.concatenate((corpus.query_request, corpus.query_request)), corpus)


def collect(
    params: Any,
    visited: np.ndarray,
    length: np.ndarray,
    hits: np.ndarray,
    request: np.ndarray,
    corpus: Corpus,
    model_runner: str = "v1",
) -> SimResult:
    """The counters of the steps `visited` (node ids into `length`, `hits` and `request`)."""
    v_drafted = length[visited] > 0
    v_len = length[visited]
    v_hits = hits[visited]
    per_pos = np.bincount(v_hits[v_hits > 0] - 1, minlength=params.k)[: params.k]
    per_pos = np.cumsum(per_pos[::-1])[::-1]
    req = request[visited]
    per_request = np.stack(
        [
            np.bincount(req, weights=v_drafted, minlength=corpus.num_requests),
            np.bincount(req, weights=v_len, minlength=corpus.num_requests),
            np.bincount(req, weights=v_hits, minlength=corpus.num_requests),
        ],
        axis=1,
    ).astype(np.int64)
    return SimResult(
        params=params,
        drafts=int(v_drafted.sum()),
        draft_tokens=int(v_len.sum()),
        accepted=int(v_hits.sum()),
        accepted_per_pos=tuple(int(x) for x in per_pos),
        steps=int(visited.shape[0]),
        baseline_steps=corpus.num_queries,
        per_request=per_request,
        model_runner=model_runner,
    )
