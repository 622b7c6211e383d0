"""Predicted counters of a vLLM 0.34 server with method "suffix" (the native GPU speculator, V2 runner).

Drafts come from `gpu_speculator.GpuSuffixState`; the loop around it is the V2 model runner's, as the
V2 n-gram simulation models it:
- a fresh server that receives the requests one at a time, in order, and nothing else;
- after the prefill, every step drafts K tokens (filler where the suffix has nothing) and all are
  verified and counted; drafts are cut so that the verified positions stay inside the model length;
- accepted: the common prefix with what the target emits next (past the output, the record's tail);
- a finished request enters the corpus with the last `PROMPT_CONTEXT` prompt tokens and every token the
  runner wrote for it, accepted tokens past the end included (modelled from reading the runner: the
  row's total length at `on_requests_finished`).
Differs from arctic-inference's drafts (vLLM 0.32/0.33, `simulator.py`): fixed length, no probability
floor or spec factor (0.34 ignores both keys), and a bounded corpus instead of a tree of requests.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from nim_specdec_lab.ngram.corpus import RecordedRequest
from nim_specdec_lab.ngram.simulator import SimResult
from nim_specdec_lab.suffix.gpu_speculator import PROMPT_CONTEXT, GpuSuffixParams, GpuSuffixState
from nim_specdec_lab.suffix.simulator import tallied


def run_request(
    state: GpuSuffixState, rec: RecordedRequest, max_model_len: int, per_pos: np.ndarray
) -> tuple[tuple[int, int, int], int, list[int]]:
    """((drafts, draft tokens, accepted), decode steps, the request's tokens at its end) for one request."""
    k = state.params.k
    full = list(rec.prompt) + list(rec.output) + list(rec.tail)
    p, end = len(rec.prompt), len(rec.prompt) + len(rec.output)
    ctx = p + 1  # the prefill sampled the first output token
    drafts = draft_tokens = accepted = steps = 0
    while ctx < end:
        context = full[:ctx]
        draft, _ = state.propose(context, context[-1])
        draft = draft[: max(0, min(k, max_model_len - ctx - 1))]
        steps += 1
        hit = 0
        if draft:
            while hit < len(draft) and ctx + hit < len(full) and draft[hit] == full[ctx + hit]:
                hit += 1
            drafts += 1
            draft_tokens += len(draft)
            accepted += hit
            per_pos[:hit] += 1
        ctx += hit + 1
    return (drafts, draft_tokens, accepted), steps, full[: min(ctx, len(full))]


def native_grid(grid: Sequence) -> list[GpuSuffixParams]:
    """The distinct 0.34 settings of an arctic grid (`SuffixParams`): 0.34 ignores the spec factor and the
    probability floor, and its corpus has the default size."""
    seen: dict[GpuSuffixParams, None] = {}
    for p in grid:
        seen.setdefault(GpuSuffixParams(p.k, p.max_tree_depth, max_cached_requests=p.max_cached_requests))
    return list(seen)


def simulate_suffix_gpu(
    records: Sequence[RecordedRequest], params: GpuSuffixParams, max_model_len: int | None = None
) -> SimResult:
    """Predicted spec-decode counters of a fresh 0.34 server for `params` over `records`, one at a time."""
    m = max_model_len if max_model_len else 1 << 40
    state = GpuSuffixState(params)

    def one_request(i: int, rec: RecordedRequest, counts: np.ndarray, per_pos: np.ndarray) -> int:
        found, steps, tokens = run_request(state, rec, m, per_pos)
        counts[:] = found
        state.ingest([tokens[max(len(rec.prompt) - PROMPT_CONTEXT, 0) :]])
        return steps

    return tallied(params, records, one_request, "v2")
