"""A deliberately naive model of vLLM's V2 model runner with method "ngram", and its serving loop.

On a CUDA GPU vLLM 0.32 runs the V2 model runner, whose n-gram drafter is `NgramGPUSpeculator`
(`vllm/v1/worker/gpu/spec_decode/ngram/speculator.py`, two Triton kernels). It differs from the
V1 proposer (`reference.py`) in two ways that change every counter:

- of the longest n in [min_n, max_n] whose suffix occurs earlier (ending before the last token),
  it takes the RIGHTMOST occurrence (V1 the earliest);
- it always returns k tokens: the tokens after that occurrence up to the context's end, and the
  last sampled token in every slot past it, or in all k slots without a match.

The scheduler keeps k placeholders per running request every step, so each step after the
prefill verifies min(k, max_model_len - len(context) - 1) draft tokens whatever the drafter
found, and counts them (drafts, draft tokens, accepted, accepted per position) like any draft.
Under greedy decoding a draft token is accepted while it equals the target's next token; the
step emits accepted + 1 tokens. V2 has no zero-draft path near the model length (V1's
`_input_fits_in_drafter`). Accepted tokens past the request's end are still counted, as in V1.
"""

from __future__ import annotations

from typing import Sequence

from nim_specdec_lab.ngram.reference import RequestCounts, Tally


def propose_v2(context: Sequence[int], min_n: int, max_n: int, k: int) -> list[int]:
    """The k draft tokens vLLM's V2 n-gram kernels write for `context` (the last token is the last sampled)."""
    total = len(context)
    context = list(context)
    last = context[-1]
    for n in range(max_n, min_n - 1, -1):
        if n > total:
            continue
        suffix = context[total - n :]
        # Rightmost start whose occurrence ends before the last token: start + n <= total - 1.
        for start in range(total - n - 1, -1, -1):
            if context[start : start + n] == suffix:
                found = context[start + n : start + n + k]
                return found + [last] * (k - len(found))
    return [last] * k


def simulate_request_v2(
    prompt: Sequence[int],
    output: Sequence[int],
    tail: Sequence[int],
    k: int,
    min_n: int,
    max_n: int,
    max_model_len: int,
) -> RequestCounts:
    """Replay one greedy request through the V2 drafter; `tail` continues `output` past its end."""
    full = list(prompt) + list(output) + list(tail)
    p_len, o_len = len(prompt), len(output)
    tally = Tally(k)
    produced = 1  # the prefill step samples the first output token
    while produced < o_len:
        total = p_len + produced
        draft = propose_v2(full[:total], min_n, max_n, k)[: max(0, max_model_len - total - 1)]
        produced += tally.step(draft, full, total)
    return tally.counts()
