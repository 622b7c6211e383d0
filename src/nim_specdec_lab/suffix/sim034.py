"""The suffix simulator's v034 mode: predicted spec-decode counters of a fresh vLLM 0.34 server (its GPU suffix
speculator, suffix/gpu034.py) over recorded greedy requests sent one at a time, in order.

As the arctic mode (suffix/simulator.py) for the server: the proposer runs after every step, the prefill
included, on every token sampled so far; a draft's accepted length is its common prefix with what the target
emits next (tokens past the output come from the record's tail). Unlike it, every decode step verifies exactly
k tokens (fillers included), and a finished request's prompt tail and response enter the corpus.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from nim_specdec_lab.ngram.corpus import RecordedRequest
from nim_specdec_lab.ngram.simulator import SimResult
from nim_specdec_lab.suffix.gpu034 import Corpus, propose

DEFAULT_CORPUS_TOKENS = 1 << 20  # vLLM 0.34's suffix_decoding_corpus_tokens
DEFAULT_TREE_DEPTH = 24
DEFAULT_CACHED_REQUESTS = 10000


@dataclass(frozen=True)
class Suffix034Params:
    """vLLM 0.34's speculative config for method "suffix" (its spec factor and probability floor do nothing)."""

    k: int
    max_tree_depth: int = DEFAULT_TREE_DEPTH
    corpus_tokens: int = DEFAULT_CORPUS_TOKENS
    max_cached_requests: int = DEFAULT_CACHED_REQUESTS  # only 0 matters: no corpus

    def __post_init__(self) -> None:
        if (
            self.k < 1
            or self.max_tree_depth < 1
            or not 0 <= self.corpus_tokens < 1 << 31
            or self.max_cached_requests < 0
        ):
            raise ValueError(
                f"invalid suffix setting {self}: need k >= 1, max_tree_depth >= 1, 0 <= corpus_tokens < 2**31 "
                "and max_cached_requests >= 0"
            )

    def speculative_config(self) -> dict:
        return {
            "method": "suffix",
            "num_speculative_tokens": self.k,
            "suffix_decoding_max_tree_depth": self.max_tree_depth,
            "suffix_decoding_corpus_tokens": self.corpus_tokens,
            "suffix_decoding_max_cached_requests": self.max_cached_requests,
        }

    def new_corpus(self) -> Corpus | None:
        """SuffixSpeculator.__init__: no corpus for a capacity of 0, no cached requests, or a depth below 2."""
        if self.corpus_tokens == 0 or self.max_cached_requests == 0 or self.max_tree_depth < 2:
            return None
        return Corpus(self.corpus_tokens)


class Model034:
    """The speculator's state for one server: what one_request asks of a drafter (tests swap in vLLM's kernels)."""

    def __init__(self, params: Suffix034Params):
        self.params, self.corpus = params, params.new_corpus()

    def propose(self, row: list[int]) -> list[int]:
        return propose(row, self.corpus, self.params.max_tree_depth, self.params.k)

    def ingest(self, row: list[int], prompt_len: int) -> None:
        if self.corpus is not None:
            self.corpus.ingest(row, prompt_len)


def one_request(rec: RecordedRequest, drafter, per_pos: np.ndarray) -> tuple:
    """((drafts, draft tokens, accepted), decode steps) of one request through `drafter` (Model034's methods)."""
    tokens = [*rec.prompt, *rec.output, *rec.tail]
    p, end, known = len(rec.prompt), len(rec.prompt) + len(rec.output), len(tokens)
    ctx, draft = p, []
    drafts = draft_tokens = accepted = steps = 0
    while True:
        hit = 0
        if draft:
            limit = min(len(draft), known - ctx)
            while hit < limit and draft[hit] == tokens[ctx + hit]:
                hit += 1
            drafts += 1
            draft_tokens += len(draft)
            accepted += hit
            per_pos[:hit] += 1
        new_ctx = ctx + hit + 1
        if ctx > p or draft:
            steps += 1
        if new_ctx >= end:
            break
        draft = drafter.propose(tokens[:new_ctx])
        ctx = new_ctx
    drafter.ingest(tokens[:end], p)  # on_requests_finished: before its slot is freed
    return (drafts, draft_tokens, accepted), steps


def simulate_suffix_034(
    records: Sequence[RecordedRequest],
    params: Suffix034Params,
    history: Sequence[RecordedRequest] = (),
    drafter=None,
) -> SimResult:
    """`history`: requests the server answered before the traffic (in its corpus, not in the prediction).
    `drafter`: the speculator to step (default: this model; the tests pass vLLM's kernels)."""
    drafter = drafter if drafter is not None else Model034(params)
    scratch = np.zeros(params.k, dtype=np.int64)
    for rec in history:
        if rec.output:
            one_request(rec, drafter, scratch)
    per_request = np.zeros((len(records), 3), dtype=np.int64)
    per_pos = np.zeros(params.k, dtype=np.int64)
    steps = 0
    for i, rec in enumerate(records):
        if rec.output:
            per_request[i], n = one_request(rec, drafter, per_pos)
            steps += n
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
        model_runner="v2",  # 0.34's only runner
    )
