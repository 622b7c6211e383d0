"""The choice: for each method the best K at every batch size, then the method, or speculation off.

K > 0 is kept at a batch size only where the model predicts at least `margin` more tokens/s than K = 0
there on the same server, so noise in the fit cannot buy a schedule that loses. K = 0 on a speculating
server is not speculation off (cost_model: per_step_s), so a method is chosen only where its schedule
is predicted at least `margin` faster than off at some swept concurrency, faster than off on average
over them, and at no swept concurrency below LOSS_FLOOR of off (a draft model's K = 0 still costs its
first pass, so its schedule can lose to off at large batches whatever K it picks there); of those, the
best mean predicted speed-up wins; none: speculation off.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from nim_specdec_lab.tune.model.acceptance import AcceptanceCurve
from nim_specdec_lab.tune.model.cost_model import CostModel

DEFAULT_MARGIN = 0.03
# The least a chosen schedule may be predicted to keep of off's tokens/s at any concurrency swept.
LOSS_FLOOR = 0.9
Ranges = tuple[tuple[int, int, int], ...]


@dataclass(frozen=True)
class MethodPlan:
    method: str
    k_by_batch: tuple[int, ...]  # index b - 1: K at batch size b, for b = 1..largest swept concurrency
    predicted: Mapping[int, float]  # concurrency -> predicted tokens/s with this schedule
    score: float  # mean over concurrencies of predicted / predicted off
    best_ratio: float = 1.0  # the largest predicted / predicted off over the concurrencies
    worst_ratio: float = 1.0  # the smallest

    @property
    def speculates(self) -> bool:
        return any(self.k_by_batch)

    def ranges(self) -> Ranges:
        return to_ranges(self.k_by_batch)


@dataclass(frozen=True)
class Choice:
    chosen: MethodPlan | None  # None: speculation off
    plans: tuple[MethodPlan, ...]  # every method considered, best first
    predicted_off: Mapping[int, float]


def best_k(model: CostModel, method: str, curve: AcceptanceCurve, batch: int, margin: float) -> int:
    k0 = model.tokens_per_s(batch, method, curve, 0)
    best, best_tps = 0, k0 * (1.0 + margin)
    for k in range(1, curve.kmax + 1):
        tps = model.tokens_per_s(batch, method, curve, k)
        if tps > best_tps:
            best, best_tps = k, tps
    return best


def to_ranges(k_by_batch: Sequence[int]) -> Ranges:
    """[first, last, K] ranges covering 1..len; vLLM carries the last K on to larger batches."""
    ranges: list[list[int]] = []
    for batch, k in enumerate(k_by_batch, start=1):
        if ranges and ranges[-1][2] == k:
            ranges[-1][1] = batch
        else:
            ranges.append([batch, batch, k])
    return tuple(tuple(r) for r in ranges)  # type: ignore[misc]


def plan_method(
    model: CostModel, method: str, curve: AcceptanceCurve, concurrencies: Sequence[int], margin: float = DEFAULT_MARGIN
) -> MethodPlan:
    largest = max(concurrencies)
    ks = tuple(best_k(model, method, curve, b, margin) for b in range(1, largest + 1))
    predicted = {c: model.tokens_per_s(c, method, curve, ks[c - 1]) for c in concurrencies}
    ratios = [predicted[c] / model.tokens_per_s(c, None, None, 0) for c in concurrencies]
    return MethodPlan(method, ks, predicted, sum(ratios) / len(ratios), max(ratios), min(ratios))


def choose(
    model: CostModel,
    curves: Mapping[str, AcceptanceCurve],
    concurrencies: Sequence[int],
    margin: float = DEFAULT_MARGIN,
) -> Choice:
    plans = sorted(
        (plan_method(model, m, curve, concurrencies, margin) for m, curve in curves.items()),
        key=lambda p: (-p.score, p.method),
    )
    winners = [
        p
        for p in plans
        if p.speculates and p.score > 1.0 and p.best_ratio >= 1.0 + margin and p.worst_ratio >= LOSS_FLOOR
    ]
    predicted_off = {c: model.tokens_per_s(c, None, None, 0) for c in concurrencies}
    return Choice(winners[0] if winners else None, tuple(plans), predicted_off)


def static_prediction(
    model: CostModel, method: str, curve: AcceptanceCurve, k: int, concurrencies: Sequence[int]
) -> dict[int, float]:
    return {c: model.tokens_per_s(c, method, curve, k) for c in concurrencies}
