"""Exact simulation of vLLM's suffix decoding over recorded greedy requests.

It drives arctic-inference's own SuffixDecodingCache the way vLLM 0.32's proposer
(vllm/v1/spec_decode/suffix_decoding.py) and model runner do, so every tree detail (prompt
trees, the global tree of earlier responses with FIFO eviction, the spec factor and the
probability floor) is the library's, not a re-implementation. What it models of the server:

- a fresh server that receives the requests one at a time, in order, and nothing else;
- the proposer runs after every step, the prefill included, and is fed every token that step
  sampled, including accepted tokens past the request's end (they come from the record's tail);
- a step whose sequence length plus k exceeds the model length does not run the proposer:
  the draft becomes k zeros and that step's tokens never reach the cache;
- drafts are cut so that verified positions stay inside the model length;
- a step with an empty draft counts nothing; a draft's accepted length is its common prefix
  with what the target emits next.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from nim_specdec_lab.ngram.corpus import RecordedRequest
from nim_specdec_lab.ngram.simulator import SimResult

# vLLM 0.32's defaults for the suffix_decoding_* keys.
DEFAULT_TREE_DEPTH = 24
DEFAULT_CACHED_REQUESTS = 10000
DEFAULT_SPEC_FACTOR = 1.0
DEFAULT_MIN_TOKEN_PROB = 0.1


@dataclass(frozen=True)
class SuffixParams:
    """vLLM's speculative config for method "suffix"."""

    k: int  # num_speculative_tokens: the most tokens one draft may have
    max_tree_depth: int = DEFAULT_TREE_DEPTH
    max_cached_requests: int = DEFAULT_CACHED_REQUESTS
    max_spec_factor: float = DEFAULT_SPEC_FACTOR
    min_token_prob: float = DEFAULT_MIN_TOKEN_PROB

    def __post_init__(self) -> None:
        # The ranges vLLM's SpeculativeConfig enforces.
        if (
            self.k < 1
            or self.max_tree_depth < 1
            or self.max_cached_requests < 0
            or self.max_spec_factor < 0
            or not 0 <= self.min_token_prob <= 1
        ):
            raise ValueError(
                f"invalid suffix setting {self}: need k >= 1, max_tree_depth >= 1, max_cached_requests >= 0, "
                "max_spec_factor >= 0 and 0 <= min_token_prob <= 1"
            )

    def speculative_config(self) -> dict:
        return {
            "method": "suffix",
            "num_speculative_tokens": self.k,
            "suffix_decoding_max_tree_depth": self.max_tree_depth,
            "suffix_decoding_max_cached_requests": self.max_cached_requests,
            "suffix_decoding_max_spec_factor": self.max_spec_factor,
            "suffix_decoding_min_token_prob": self.min_token_prob,
        }


def new_cache(params: SuffixParams):
    """The cache vLLM's proposer builds at start-up (imported here: the package is optional)."""
    from arctic_inference.suffix_decoding import SuffixDecodingCache  # noqa: PLC0415 - optional: installed apart (the Makefile builds it)

    return SuffixDecodingCache(max_tree_depth=params.max_tree_depth, max_cached_requests=params.max_cached_requests)


def _one_request(
    cache,
    req_id: object,
    rec: RecordedRequest,
    params: SuffixParams,
    max_model_len: int,
    out: np.ndarray,
    per_pos: np.ndarray,
) -> int:
    """Run one request through `cache`; fill `out` = (drafts, draft_tokens, accepted); return its decode steps."""
    tokens = rec.prompt + rec.output + rec.tail
    stream = np.asarray(tokens, dtype=np.int32)  # what the cache reads: vLLM hands it int32 rows
    known = len(tokens)
    p = len(rec.prompt)
    end = p + len(rec.output)
    k, depth, m = params.k, params.max_tree_depth, max_model_len
    speculate, add = cache.speculate, cache.add_active_response
    started = False
    ctx, draft = p, ()  # the step's context length before it runs, and the draft it verifies
    drafts = draft_tokens = accepted = steps = 0
    while True:
        n = len(draft)
        hit = 0
        if n:
            # Accepted: common prefix with what the target emits (tokens past the output come from the tail).
            limit = min(n, known - ctx)
            while hit < limit and draft[hit] == tokens[ctx + hit]:
                hit += 1
            drafts += 1
            draft_tokens += n
            accepted += hit
            if hit:
                per_pos[:hit] += 1
        new_ctx = ctx + hit + 1
        finished = new_ctx >= end
        if ctx > p or n:
            steps += 1
        # The model runner runs the proposer only if the step's sequence fits with k more positions.
        if ctx + n + k > m:
            nxt = (0,) * k
        elif new_ctx >= m:
            nxt = ()
        else:
            if not started:
                cache.start_request(req_id, stream[:p])
                started = True
            add(req_id, stream[ctx:new_ctx])
            pattern = stream[max(0, new_ctx - depth) : new_ctx]
            nxt = speculate(
                req_id,
                pattern,
                max_spec_tokens=min(k, m - new_ctx - 1),
                max_spec_factor=params.max_spec_factor,
                min_token_prob=params.min_token_prob,
            ).token_ids
        if finished:
            break
        # The scheduler keeps verified positions inside the model length.
        room = max(0, m - new_ctx - 1)
        draft = tuple(nxt[:room]) if len(nxt) > room else tuple(nxt)
        ctx = new_ctx
    if started:
        cache.stop_request(req_id)
    out[:] = (drafts, draft_tokens, accepted)
    return steps


def simulate_suffix(
    records: Sequence[RecordedRequest],
    params: SuffixParams,
    max_model_len: int | None = None,
    history: Sequence[RecordedRequest] = (),
) -> SimResult:
    """Predicted spec-decode counters of a fresh server for `params` over `records`, sent one at a time in order.

    `history`: requests the server answered before the traffic, which are in its global tree but
    not in the prediction; e.g. the one-token completion of the launcher's readiness probe
    (/v1/health/ready) on a server that a Kubernetes probe or a test checked before the traffic.
    """
    m = max_model_len if max_model_len else 1 << 40
    cache = new_cache(params)
    scratch, no_pos = np.zeros(3, dtype=np.int64), np.zeros(params.k, dtype=np.int64)
    for i, rec in enumerate(history):
        if rec.output:
            _one_request(cache, f"history-{i}", rec, params, m, scratch, no_pos)
    return tallied(params, records, lambda i, rec, row, pos: _one_request(cache, i, rec, params, m, row, pos))


# (index, request, its counters, accepted tokens per position) -> its decode steps
OneRequest = Callable[[int, RecordedRequest, np.ndarray, np.ndarray], int]


def tallied(params, records: Sequence[RecordedRequest], one_request: OneRequest, runner: str = "v1") -> SimResult:
    """The counters of a run of `records` in order: `one_request` runs each request with output, fills its
    (drafts, draft tokens, accepted), adds its accepted tokens per position and returns its decode steps."""
    per_request = np.zeros((len(records), 3), dtype=np.int64)
    per_pos = np.zeros(params.k, dtype=np.int64)
    steps = 0
    for i, rec in enumerate(records):
        if rec.output:
            steps += one_request(i, rec, per_request[i], per_pos)
    totals = per_request.sum(axis=0)
    return SimResult(
        params=params,
        drafts=int(totals[0]),
        draft_tokens=int(totals[1]),
        accepted=int(totals[2]),
        accepted_per_pos=tuple(int(x) for x in per_pos),
        steps=steps,
        baseline_steps=int(sum(max(len(r.output) - 1, 0) for r in records)),
        per_request=per_request,
        model_runner=runner,
    )
