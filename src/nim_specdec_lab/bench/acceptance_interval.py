"""How sure an acceptance figure is: the interval of a ratio whose units are prompts (pure: numbers in, numbers
out). How sure a speedup is, from paired rounds, is nim_specdec_lab.stats'.

Acceptance is a ratio of two sums over a category's requests: accepted drafts / verify steps (acceptance
length - 1), accepted / drafted tokens (acceptance rate). The interval is the standard one of a ratio
estimator (the delta method): with each prompt's totals (a_i, s_i) and R = sum(a) / sum(s),
    se(R)^2 = n / (n - 1) * sum((a_i - R * s_i)^2) / sum(s)^2,
and R +/- t(0.975, n - 1) * se. The prompt is the unit: its repeats in one run, over rounds or over
concurrencies answer the same prompt (greedy, nearly the same tokens), so they are summed before, never
counted as independent requests, which would make the interval far too narrow. A bootstrap over prompts
would give about the same interval with many prompts and a too narrow one with few; this one is also
deterministic. The interval says how much the figure would move with another sample of prompts of the
category; the ends are kept within the ratio's possible range.

An unweighted mean of independent ratios (SPEED-Bench's Overall, the mean over categories) has the
standard error sqrt(sum(se_c^2)) / C and the Welch-Satterthwaite degrees of freedom.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from nim_specdec_lab.stats import t975

METHOD = (
    "95% t-interval of a ratio estimator over prompts (delta method): each prompt's responses summed, "
    "prompts as the sampled units; Overall: the mean over categories, its interval from theirs "
    "(Welch-Satterthwaite degrees of freedom)"
)


@dataclass(frozen=True)
class Ratio:
    value: float
    interval: tuple[float, float] | None  # None with fewer than 2 units
    units: int
    se: float | None
    df: float | None

    def shifted(self, by: float, low: float, high: float) -> "Ratio":
        """The same ratio plus `by` (acceptance length = 1 + accepted / steps), its interval kept in
        [low, high]."""
        pair = None
        if self.interval is not None:
            pair = (max(low, self.interval[0] + by), min(high, self.interval[1] + by))
        return Ratio(self.value + by, pair, self.units, self.se, self.df)

    def to_json(self, digits: int = 4) -> dict:
        return {
            "value": round(self.value, digits),
            "interval": None if self.interval is None else [round(v, digits) for v in self.interval],
            "units": self.units,
        }


def _interval(value: float, se: float | None, df: float | None) -> tuple[float, float] | None:
    if se is None or df is None:
        return None
    if se == 0:
        return (value, value)
    half = t975(max(1, math.floor(df))) * se  # rounding the degrees of freedom down: the wider interval
    return (value - half, value + half)


def ratio(units: Sequence[tuple[float, float]]) -> Ratio | None:
    """`units`: (numerator, denominator) of each prompt; None when the denominators sum to 0."""
    total_a = sum(a for a, _ in units)
    total_s = sum(s for _, s in units)
    if total_s <= 0:
        return None
    value, n = total_a / total_s, len(units)
    if n < 2:
        return Ratio(value, None, n, None, None)
    se = math.sqrt(n / (n - 1) * sum((a - value * s) ** 2 for a, s in units)) / total_s
    return Ratio(value, _interval(value, se, n - 1), n, se, float(n - 1))


def mean_of(parts: Sequence[Ratio]) -> Ratio | None:
    """The unweighted mean of independent ratios; no interval where a part has none."""
    if not parts:
        return None
    c = len(parts)
    value = sum(p.value for p in parts) / c
    units = sum(p.units for p in parts)
    if any(p.se is None or p.df is None for p in parts):
        return Ratio(value, None, units, None, None)
    variances = [(p.se or 0.0) ** 2 / c**2 for p in parts]
    total = sum(variances)
    if total == 0:
        return Ratio(value, (value, value), units, 0.0, None)
    df = total**2 / sum(v**2 / (p.df or 1.0) for v, p in zip(variances, parts) if v > 0)
    se = math.sqrt(total)
    return Ratio(value, _interval(value, se, df), units, se, df)
