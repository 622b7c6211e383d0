"""A deliberately naive model of vLLM's n-gram proposer and of the serving loop around it.

This is the specification the fast simulator is tested against: short, literal, quadratic.
It follows vLLM 0.32's `vllm/v1/spec_decode/ngram_proposer.py` (method "ngram") and the
scheduler's accounting of draft and accepted tokens:

- the proposer sees the prompt plus every token generated so far (the "context");
- it looks for the longest n between `min_n` and `max_n` whose last-n-tokens suffix occurs
  earlier in the context, ending before the last token (a match may not be the suffix
  itself, but may overlap it); ties go to the earliest occurrence;
- it proposes the up-to-k tokens that followed that occurrence, cut at the end of the
  context and at the model length (`k = min(k, max_model_len - len(context))`);
- the scheduler then trims the proposal so that the verified positions stay inside the
  model length (at most `max_model_len - len(context) - 1` draft tokens);
- under greedy decoding a draft token is accepted while it equals the target's own next
  token; the step then emits accepted + 1 tokens. A step with no draft emits one token
  and counts nothing. Accepted tokens past the request's end (max_tokens or a stop) are
  still counted, so the "true continuation" extends past the returned output;
- near the model length the drafter does not run at all: after a forward pass whose longest
  sequence (context + scheduled draft tokens; the prompt after the prefill) plus k exceeds
  `max_model_len`, the model runner fills the next draft with k zeros (token id 0) instead,
  and the scheduler trims and counts those like any draft (`_input_fits_in_drafter` in
  vLLM's model runner). vLLM takes that maximum over the whole batch; one request at a time,
  it is the request's own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence


def propose(context: Sequence[int], min_n: int, max_n: int, k: int, max_model_len: int) -> list[int]:
    """The draft vLLM's n-gram proposer returns for `context` (possibly empty)."""
    total = len(context)
    if total < min_n:
        return []
    k = min(k, max_model_len - total)
    if k <= 0:
        return []
    context = list(context)
    for n in range(max_n, min_n - 1, -1):
        suffix = context[total - n :]
        # The occurrence must end before the last token: start + n <= total - 1.
        for start in range(0, total - n):
            if context[start : start + n] == suffix:
                begin = start + n
                return context[begin : begin + min(k, total - begin)]
    return []


def drafter_runs_after(seq_len: int, k: int, max_model_len: int) -> bool:
    """Whether the drafter runs after a forward pass whose longest sequence is `seq_len` tokens."""
    return seq_len + k <= max_model_len


@dataclass(frozen=True)
class RequestCounts:
    drafts: int
    draft_tokens: int
    accepted: int
    accepted_per_pos: tuple[int, ...]
    steps: int  # forward passes after the prefill, drafting or not
    zero_drafts: int = 0  # drafts of zeros scheduled because the drafter did not run


@dataclass
class Tally:
    """One request's counts as its replay goes, step by step (V1's proposer and V2's drafter alike)."""

    k: int
    drafts: int = 0
    draft_tokens: int = 0
    accepted: int = 0
    steps: int = 0
    zero_drafts: int = 0
    per_pos: list[int] = field(init=False)

    def __post_init__(self) -> None:
        self.per_pos = [0] * self.k

    def step(self, draft: Sequence[int], full: Sequence[int], total: int) -> int:
        """Count one forward pass whose draft follows the first `total` tokens of `full` (the true sequence);
        returns how many tokens it produced: one without a draft, else the accepted prefix plus one."""
        self.steps += 1
        if not draft:
            return 1
        hits = 0
        while hits < len(draft) and total + hits < len(full) and draft[hits] == full[total + hits]:
            hits += 1
        self.drafts += 1
        self.draft_tokens += len(draft)
        self.accepted += hits
        for pos in range(hits):
            self.per_pos[pos] += 1
        return hits + 1

    def counts(self) -> RequestCounts:
        per_pos = tuple(self.per_pos)
        return RequestCounts(self.drafts, self.draft_tokens, self.accepted, per_pos, self.steps, self.zero_drafts)


def simulate_request(
    prompt: Sequence[int],
    output: Sequence[int],
    tail: Sequence[int],
    k: int,
    min_n: int,
    max_n: int,
    max_model_len: int,
) -> RequestCounts:
    """Replay one greedy request through the proposer; `tail` continues `output` past its end."""
    full = list(prompt) + list(output) + list(tail)
    p_len, o_len = len(prompt), len(output)
    tally = Tally(k)
    produced = 1  # the prefill step samples the first output token
    drafter_runs = drafter_runs_after(p_len, k, max_model_len)  # decided after the prefill pass
    while produced < o_len:
        total = p_len + produced
        draft = propose(full[:total], min_n, max_n, k, max_model_len) if drafter_runs else [0] * k
        draft = draft[: max(0, max_model_len - total - 1)]
        tally.zero_drafts += bool(draft) and not drafter_runs
        # This pass computes the context and the draft: its sequence length decides the next draft.
        drafter_runs = drafter_runs_after(total + len(draft), k, max_model_len)
        produced += tally.step(draft, full, total)
    return tally.counts()
