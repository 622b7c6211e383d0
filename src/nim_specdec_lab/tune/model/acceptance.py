"""How many tokens a request gains per engine step at each K: the acceptance curve of one method.

Every figure is per "slot": one request's share of one engine step, prefill included (a request of N
output tokens with A accepted draft tokens occupies N - A slots). Then, at batch size b, an engine step
emits b * tokens_per_slot tokens and verifies b * draft_tokens_per_slot draft tokens.

Two sources, as the issue asks: the exact simulators for model-free methods (their proposals depend on
the text, so K changes which positions draft) and the server's per-position counters for model drafts
(which draft at every step, so the first K positions tell the curve at K).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class AcceptancePoint:
    k: int
    tokens_per_slot: float  # output tokens per request per engine step (1.0 without speculation)
    draft_tokens_per_slot: float  # draft tokens verified per request per engine step


@dataclass(frozen=True)
class AcceptanceCurve:
    source: str  # "simulator" or "server counters"
    points: tuple[AcceptancePoint, ...]  # index = K, from 0 to the largest K
    model_runner: str | None = None  # the vLLM model runner a simulated curve holds for ("v1" or "v2")

    @property
    def kmax(self) -> int:
        return len(self.points) - 1

    def at(self, k: int) -> AcceptancePoint:
        return self.points[k]

    def to_json(self) -> dict:
        runner = {} if self.model_runner is None else {"model_runner": self.model_runner}
        return {
            "source": self.source,
            **runner,
            "by_k": [
                {
                    "k": p.k,
                    "tokens_per_slot": round(p.tokens_per_slot, 4),
                    "draft_tokens_per_slot": round(p.draft_tokens_per_slot, 4),
                }
                for p in self.points
            ],
        }


OFF_POINT = AcceptancePoint(0, 1.0, 0.0)


def slot_figures(output_tokens: float, accepted: float, draft_tokens: float) -> tuple[float, float]:
    """(tokens per slot, draft tokens per slot) of a run that emitted `output_tokens`."""
    slots = output_tokens - accepted
    if output_tokens <= 0 or slots <= 0:
        return 1.0, 0.0
    return output_tokens / slots, draft_tokens / slots


def curve_from_simulation(runs: Sequence[tuple[int, float, float, float]], model_runner: str = "v1") -> AcceptanceCurve:
    """From simulator totals per K: (k, output tokens, accepted, draft tokens), K = 1..kmax in any order."""
    by_k = {k: slot_figures(out, acc, drafted) for k, out, acc, drafted in runs}
    if sorted(by_k) != list(range(1, len(by_k) + 1)):
        raise ValueError(f"simulated K values {sorted(by_k)} are not 1..K")
    points = [OFF_POINT] + [AcceptancePoint(k, *by_k[k]) for k in sorted(by_k)]
    return AcceptanceCurve("simulator", tuple(points), model_runner)


def curve_from_positions(
    per_position: Sequence[float], drafts: float, output_tokens: float, accepted: float
) -> AcceptanceCurve:
    """From a server's counters at the largest K, for a draft that drafts K tokens at every decode step.

    Position i was accepted in per_position[i] of `drafts` steps (only when 0..i-1 were too), so running
    at K < kmax keeps the first K positions: a step gains 1 + sum(rate[:K]) tokens and verifies K. The
    prefill slot of each request (emitting one token, drafting nothing) is kept in its measured share.
    """
    slots = output_tokens - accepted
    if drafts <= 0 or slots <= 0:
        raise ValueError("the server drafted nothing; per-position acceptance is unknown")
    decode_share = min(1.0, drafts / slots)  # the rest of the slots are prefills
    rates = [value / drafts for value in per_position]
    points = [OFF_POINT]
    for k in range(1, len(rates) + 1):
        points.append(AcceptancePoint(k, 1.0 + decode_share * sum(rates[:k]), decode_share * k))
    return AcceptanceCurve("server counters", tuple(points))
