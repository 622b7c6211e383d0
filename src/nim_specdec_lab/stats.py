"""How sure a speedup is: the lab's one statistics module (pure: numbers in, numbers out).

Method: a Student t-interval on the log of the paired rounds' ratios. Each round starts a fresh server for
each side and measures both in turn, so one round gives one ratio candidate / baseline; the log makes a
ratio's noise additive and symmetric (0.8x and 1.25x are equally far from 1) and the interval's ends come
back as ratios. Why not a bootstrap: with the few rounds a run affords (3 by default) a bootstrap has only a
handful of distinct resamples and its interval is far too narrow; the t-interval keeps its 95% coverage at
any number of rounds as long as the log ratios scatter about normally, and it widens honestly when they do
not agree. Pairing within a round cancels what both sides share (a slow minute of a shared machine).

Verdict: `faster` where the whole interval lies above 1 + margin, `slower` where it lies below 1 - margin,
else `no measurable difference`. The smallest detectable effect is the speedup whose interval, at this
run's spread and number of rounds, would just have cleared 1 + margin (and its mirror below 1 - margin).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Hashable, Mapping, Sequence

FASTER, SLOWER, NO_DIFFERENCE = "faster", "slower", "no measurable difference"
DEFAULT_MARGIN = 0.03  # the same 3% tune asks of K > 0 over K = 0
METHOD = (
    "95% Student t-interval on the log of the paired rounds' ratios (candidate / baseline per round), "
    "back-transformed; speedup = their geometric mean"
)
# Two-sided 97.5% quantiles of Student's t for 1..30 degrees of freedom (standard tables).
_T975 = (
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
)
_Z975 = 1.959964


def t975(df: int) -> float:
    """The 97.5% quantile of Student's t with `df` degrees of freedom (a table to 30, then a series)."""
    if df < 1:
        raise ValueError(f"degrees of freedom {df} below 1")
    if df <= len(_T975):
        return _T975[df - 1]
    z = _Z975  # Cornish-Fisher expansion: within 1e-3 of the exact value beyond 30
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


@dataclass(frozen=True)
class Speedup:
    speedup: float  # geometric mean of the paired ratios
    interval: tuple[float, float] | None  # None with fewer than 2 rounds
    verdict: str | None  # None without an interval
    rounds: int
    margin: float
    detectable: tuple[float, float] | None  # (faster at or above, slower at or below) this run could have told
    log_mean: float
    log_se: float | None

    @property
    def log_sd(self) -> float | None:
        """The spread of one round's log ratio behind the interval (its standard error x sqrt(rounds))."""
        return None if self.log_se is None else self.log_se * math.sqrt(self.rounds)

    def to_json(self) -> dict:
        pair = lambda v: None if v is None else [round(v[0], 4), round(v[1], 4)]  # noqa: E731
        return {
            "speedup": round(self.speedup, 4),
            "speedup_interval": pair(self.interval),
            "verdict": self.verdict,
            "rounds": self.rounds,
            "margin": self.margin,
            "detectable": pair(self.detectable),
        }


def verdict(low: float, high: float, margin: float = DEFAULT_MARGIN) -> str:
    if low > 1 + margin:
        return FASTER
    if high < 1 - margin:
        return SLOWER
    return NO_DIFFERENCE


def from_log_ratios(
    logs: Sequence[float], margin: float = DEFAULT_MARGIN, df: int | None = None, se: float | None = None
) -> Speedup:
    """The speedup of log ratios `logs`; `se`/`df` override the sample's (a weighted combination)."""
    if not logs:
        raise ValueError("no rounds")
    n = len(logs)
    mean = sum(logs) / n
    if se is None and n >= 2:
        sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
        se = sd / math.sqrt(n)
    if se is None:
        return Speedup(math.exp(mean), None, None, n, margin, None, mean, None)
    half = t975(df if df is not None else n - 1) * se
    low, high = math.exp(mean - half), math.exp(mean + half)
    detectable = ((1 + margin) * math.exp(half), (1 - margin) * math.exp(-half))
    return Speedup(math.exp(mean), (low, high), verdict(low, high, margin), n, margin, detectable, mean, se)


def paired(pairs: Sequence[tuple[float, float]], margin: float = DEFAULT_MARGIN) -> Speedup:
    """`pairs`: (baseline, candidate) throughput of each round, both above 0."""
    bad = [p for p in pairs if not (p[0] > 0 and p[1] > 0)]
    if bad:
        raise ValueError(f"a round without throughput: {bad[0]}")
    return from_log_ratios([math.log(c / b) for b, c in pairs], margin)


def by_position(
    baseline: Mapping[Hashable, float], candidate: Mapping[Hashable, float], margin: float = DEFAULT_MARGIN
) -> Speedup | None:
    """Rounds paired by position: the baseline's and the candidate's figure of the same round (say, the n-th
    server of each, started in the same pass). Positions where either side has no figure above 0 are left
    out; None when no position is left."""
    pairs = [(baseline[p], candidate[p]) for p in baseline if p in candidate and baseline[p] > 0 and candidate[p] > 0]
    return paired(pairs, margin) if pairs else None


def wholly_below(result: Speedup | None, bound: float = 1.0) -> bool:
    """Whether the interval lies entirely below `bound`: measured slower than it beyond this run's noise.
    A speedup without an interval (one round) is never wholly below anything."""
    return result is not None and result.interval is not None and result.interval[1] < bound


def rounds_to_resolve(log_sd: float, speedup: float, margin: float = DEFAULT_MARGIN, most: int = 100) -> int | None:
    """The fewest rounds whose interval, at a spread of `log_sd` between rounds' log ratios, would clear
    1 + margin for a true `speedup` (or 1 - margin for a slowdown) on average; None beyond `most` rounds or
    for a speedup inside the margin."""
    gap = abs(math.log(speedup)) - (math.log(1 + margin) if speedup >= 1 else -math.log(1 - margin))
    if gap <= 0:
        return None
    for n in range(2, most + 1):
        if t975(n - 1) * log_sd / math.sqrt(n) < gap:
            return n
    return None


def weighted(
    parts: Mapping[int, Speedup], weights: Mapping[int, float], margin: float = DEFAULT_MARGIN
) -> Speedup | None:
    """One speedup over several concurrencies, weighted (weights sum to 1): the weighted mean of their log
    speedups, its standard error from theirs (independent servers per concurrency would be; the rounds
    share servers, so this is a slight underestimate where concurrencies co-vary), and the fewest rounds'
    degrees of freedom. None when a weighted part has no interval."""
    used = {c: w for c, w in weights.items() if w > 0}
    if not used or any(parts[c].log_se is None for c in used):
        return None
    total = sum(used.values())
    mean = sum(w * parts[c].log_mean for c, w in used.items()) / total
    se = math.sqrt(sum((w / total * parts[c].log_se) ** 2 for c, w in used.items()))
    rounds = min(parts[c].rounds for c in used)
    return from_log_ratios([mean] * rounds, margin, df=rounds - 1, se=se) if rounds >= 2 else None


def in_flight(timestamps_ms: Sequence[float], latencies_s: Sequence[float]) -> float | None:
    """Little's law: requests in flight on average = arrival rate x mean time in the system, the rate from
    the capture's timestamps and the time from measured request latencies. None without a time span."""
    if len(timestamps_ms) < 2 or not latencies_s:
        return None
    span_s = (max(timestamps_ms) - min(timestamps_ms)) / 1000.0
    if span_s <= 0:
        return None
    return len(timestamps_ms) / span_s * (sum(latencies_s) / len(latencies_s))


def concurrency_weights(level: float | None, measured: Sequence[int]) -> dict[int, float]:
    """Weights over the measured concurrencies standing for `level` in flight: all on the nearest below
    the smallest or above the largest, else split linearly between the two that bracket it. Without a
    level (no timestamps): equal weights."""
    points = sorted(set(measured))
    if not points:
        return {}
    if level is None:
        return {c: 1.0 / len(points) for c in points}
    if level <= points[0]:
        return {points[0]: 1.0}
    if level >= points[-1]:
        return {points[-1]: 1.0}
    for low, high in zip(points, points[1:]):
        if low <= level <= high:
            share = (level - low) / (high - low)
            return {c: w for c, w in ((low, 1.0 - share), (high, share)) if w > 0}
    raise AssertionError("unreachable: the level lies between the points")


def one_line(result: Speedup, what: str) -> str:
    """`what`: e.g. 'on this traffic (1.7 in flight on average)'."""
    if result.interval is None:
        return f"expected speedup {what}: {result.speedup:.3f}x (one round: no interval)"
    low, high = result.interval
    return (
        f"expected speedup {what}: {result.speedup:.3f}x, 95% interval [{low:.3f}, {high:.3f}] over "
        f"{result.rounds} rounds: {result.verdict}"
    )
