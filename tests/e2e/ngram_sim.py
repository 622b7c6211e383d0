"""What vLLM's n-gram proposer drafts and gets accepted for one greedy request, computed offline.

Rules (measured against vLLM 0.32 on the CPU): after every step from the first sampled token on, the
proposer looks at prompt + generated tokens, takes the longest suffix (prompt_lookup_max down to
prompt_lookup_min) that also occurs earlier, at its earliest occurrence, and proposes the up to k tokens
that followed it. An empty proposal counts nothing and advances one token; otherwise drafts += 1, draft
tokens += len(proposal), accepted += the common prefix with the true continuation, and generation
advances by accepted + 1. Drafts reaching past max_tokens are still verified, so the true continuation
must extend beyond the returned output.
"""

from __future__ import annotations

from typing import Sequence


def propose(context: Sequence[int], k: int, lookup_min: int, lookup_max: int) -> list[int]:
    for n in range(min(lookup_max, len(context) - 1), lookup_min - 1, -1):
        suffix = list(context[-n:])
        for start in range(0, len(context) - n):  # an occurrence other than the suffix itself
            if list(context[start : start + n]) == suffix:
                return list(context[start + n : start + n + k])
    return []


def simulate(prompt: Sequence[int], continuation: Sequence[int], max_tokens: int, k: int = 3,
             lookup_min: int = 1, lookup_max: int = 4) -> tuple[int, int, int]:
    """(drafts, draft tokens, accepted tokens); continuation must hold at least max_tokens + k tokens."""
    assert len(continuation) >= max_tokens + k, "the continuation must reach past max_tokens by k tokens"
    drafts = draft_tokens = accepted = 0
    position = 1  # the first token comes from the prefill, before any proposal
    while position < max_tokens:
        proposal = propose(list(prompt) + list(continuation[:position]), k, lookup_min, lookup_max)
        if not proposal:
            position += 1
            continue
        truth = continuation[position : position + len(proposal)]
        hits = 0
        while hits < len(proposal) and proposal[hits] == truth[hits]:
            hits += 1
        drafts, draft_tokens, accepted = drafts + 1, draft_tokens + len(proposal), accepted + hits
        position += hits + 1
    return drafts, draft_tokens, accepted
