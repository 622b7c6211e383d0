"""How sure a speedup is, from paired rounds (pure: numbers in, numbers out). How sure an acceptance figure is,
from prompts, is bench.acceptance_interval's.

Method: a Student t-interval on the log of the paired rounds' ratios. Each round starts a fresh server for
each side and measures both in turn, so one round gives one ratio candidate / baseline; the log makes a
ratio's noise additive and symmetric (0.8x and 1.25x are equally far from 1) and the interval's ends come
back as ratios. Why not a bootstrap: with the few rounds a run affords (3 by default) a bootstrap has only a
handful of distinct resamples and its interval is far too narrow; the t-interval keeps its 95% coverage at
any number of rounds as long as the log ratios scatter about normally, and it widens honestly when they do
not agree. Pairing within a round cancels what both sides share (a slow minute of a shared machine).

Verdict: `faster` where the whole interval lies above 1 + margin, `slower` where it lies below 1 - margin,
else `no measurable difference`. The minimum detectable effect (MDE) is the smallest true speedup that a
run with this many rounds finds `faster` in 80% of runs (and its mirror below, found `slower` as often) at
a spread between rounds as large as the measured one allows at 90% confidence: a power calculation with the
t distribution (nim_specdec_lab.power), on scipy.special. `p_faster` is the one-sided p-value of "no more
than 1 + margin", which tune's Holm step over several candidates reads (tune.deciding.decide).

Every figure is taken in log space (log c - log b, never c / b), so no pair of throughputs a double holds
overflows or vanishes on the way; the lab's readers refuse figures outside their stated ranges before
they get here (tune.deciding.recorded_runs).

Several concurrencies at once (the speedup on a traffic): every concurrency of a round is measured on the
same pair of servers, so they share that pair's start-up luck and cannot count as independent. The
traffic's log ratio is taken within each round (the weighted mean of that round's log ratios over the
concurrencies), and the t-interval runs over those per-round figures: one degree of freedom per round,
never per concurrency.

The configuration tune recommends is picked: the largest qualified speedup among m candidates, whose
estimate therefore reads high (the winner's curse), and whose own interval covers its truth in far fewer
than 95% of the runs where it is picked (60% with 8 candidates at 3 rounds: bench/bench_selection.py). The interval
shown for the pick (`picked_interval`) is simultaneous over the family: each candidate's t-interval at
1 - (1 - PICKED_LEVEL) / m (Bonferroni at 99%), so all m cover their truths together in at least 99% of
runs, whatever the correlation their shared baseline gives them, and the pick with them. Why Bonferroni
and not max-t: the candidates share off's servers, so their ratios are correlated, and with 3 rounds the
m x m correlation a max-t needs has rank 2 and cannot be estimated (nor resampled). Why 99% and not 95%:
the coverage that matters is the one in the runs where a pick is made, and those are the runs whose
estimates read high: at 97.5% simultaneous a single candidate picked at 3 rounds was covered less than 95%
of the times it was picked (bench/bench_selection.py measures 99% on normal, t(3)-tailed and loaded
worlds). No interval computed from the same rounds keeps 95% where a pick is rare and barely made (a true
gain close to the margin): only a round held out of the choice would.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Hashable, Mapping, Sequence

from nim_specdec_lab import power

FASTER, SLOWER, NO_DIFFERENCE = "faster", "slower", "no measurable difference"
DEFAULT_MARGIN = 0.03  # the same 3% tune asks of K > 0 over K = 0
METHOD = (
    "95% Student t-interval on the log of the paired rounds' ratios (candidate / baseline per round), "
    "back-transformed; speedup = their geometric mean; over several concurrencies the weighted log ratio "
    "within each round, then the interval over rounds; MDE: the true speedup found with 80% probability "
    "(noncentral t power) at the spread's 90% upper confidence bound times 1.73 (a quarter of the rounds 3 "
    "times as noisy)"
)


PICKED_LEVEL = 0.99  # the simultaneous level of the interval shown for the configuration picked
PICKED_METHOD = (
    "simultaneous over the candidates: each one's t-interval at 1 - 1% / m (Bonferroni at 99% over the m "
    "candidates measured), so that the configuration picked as the largest is covered as often as it is picked"
)


def t975(df: int) -> float:
    """The 97.5% quantile of Student's t with `df` degrees of freedom (scipy.special.stdtrit)."""
    return power.t_quantile(df, 0.975)


def _exp(x: float) -> float:
    """exp kept inside a double: a log figure past 700 (no measurement in the lab's ranges gives one) is
    held at exp(700) rather than overflowing."""
    return math.exp(max(-700.0, min(700.0, x)))


@dataclass(frozen=True)
class Speedup:
    speedup: float  # geometric mean of the paired ratios
    interval: tuple[float, float] | None  # None with fewer than 2 rounds
    verdict: str | None  # None without an interval
    rounds: int
    margin: float
    mde: tuple[float, float] | None  # (faster, slower): found with 80% probability at this spread and rounds
    log_mean: float
    log_se: float | None
    p_faster: float | None = None  # one-sided p of "no more than 1 + margin": the chance of a mean this high

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
            "mde": None
            if self.mde is None
            else {
                "faster": round(self.mde[0], 4),
                "slower": round(self.mde[1], 4),
                "power": power.POWER,
                "spread_confidence": power.SPREAD_CONFIDENCE,
                "tails": round(power.TAILS, 4),
            },
            "p_faster": None if self.p_faster is None else float(f"{self.p_faster:.4g}"),
        }


def picked_interval(result: Speedup, family: int) -> tuple[float, float] | None:
    """The interval of a configuration picked among `family` candidates (PICKED_METHOD); None without an
    interval of its own (one round)."""
    if result.log_se is None:
        return None
    q = power.t_quantile(result.rounds - 1, 1.0 - (1.0 - PICKED_LEVEL) / (2 * max(1, family)))
    return _exp(result.log_mean - q * result.log_se), _exp(result.log_mean + q * result.log_se)


def verdict(low: float, high: float, margin: float = DEFAULT_MARGIN) -> str:
    if low > 1 + margin:
        return FASTER
    if high < 1 - margin:
        return SLOWER
    return NO_DIFFERENCE


def from_log_ratios(logs: Sequence[float], margin: float = DEFAULT_MARGIN) -> Speedup:
    """The speedup of the rounds' log ratios `logs` (one figure per round)."""
    if not logs:
        raise ValueError("no rounds")
    n = len(logs)
    mean = math.fsum(logs) / n
    if n < 2:
        return Speedup(_exp(mean), None, None, n, margin, None, mean, None)
    sd = math.sqrt(math.fsum((x - mean) ** 2 for x in logs) / (n - 1))
    se = sd / math.sqrt(n)
    t = t975(n - 1)
    low, high = _exp(mean - t * se), _exp(mean + t * se)
    mde = power.mde(sd, n, margin, t)
    excess = mean - math.log1p(margin)
    if se > 0:
        p = power.t_tail(n - 1, excess / se)
    else:
        p = 0.0 if excess > 0 else 1.0
    return Speedup(_exp(mean), (low, high), verdict(low, high, margin), n, margin, mde, mean, se, p)


def paired(pairs: Sequence[tuple[float, float]], margin: float = DEFAULT_MARGIN) -> Speedup:
    """`pairs`: (baseline, candidate) throughput of each round, both above 0."""
    bad = [p for p in pairs if not (p[0] > 0 and p[1] > 0)]
    if bad:
        raise ValueError(f"a round without throughput: {bad[0]}")
    return from_log_ratios([math.log(c) - math.log(b) for b, c in pairs], margin)  # no c / b: it may overflow


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


def rounds_to_resolve(result: Speedup, most: int = power.MOST_ROUNDS) -> int | None:
    """The fewest rounds that find a true speedup (or slowdown) of `result`'s point estimate with 80%
    probability at its measured spread (power.rounds_to_resolve: a forecast); None without an interval,
    beyond `most` rounds or for a speedup inside the margin."""
    if result.log_sd is None:
        return None
    return power.rounds_to_resolve(result.log_sd, result.rounds, result.speedup, result.margin, most)


Figures = Mapping[int, Mapping[Hashable, float]]  # concurrency -> round -> tokens/s of that round's server


def weighted_by_round(
    baseline: Figures, candidate: Figures, weights: Mapping[int, float], margin: float = DEFAULT_MARGIN
) -> Speedup | None:
    """One speedup over several concurrencies weighted by `weights`: in each round, the weighted mean of its
    log ratios over the concurrencies; then the interval over those rounds (from_log_ratios). A round
    counts only where both sides have a figure above 0 at every weighted concurrency; None where no round
    does or nothing is weighted."""
    used = {c: w for c, w in weights.items() if w > 0}
    if not used:
        return None
    top = max(used.values())
    used = {c: w / top for c, w in used.items()}  # scaled to at most 1 first: a sum of huge weights overflows
    total = math.fsum(used.values())

    def complete(r: Hashable) -> bool:
        return all(baseline.get(c, {}).get(r, 0) > 0 and candidate.get(c, {}).get(r, 0) > 0 for c in used)

    rounds = sorted({r for c in used for r in baseline.get(c, {})}, key=str)
    logs = [
        math.fsum(w * (math.log(candidate[c][r]) - math.log(baseline[c][r])) for c, w in used.items()) / total
        for r in rounds
        if complete(r)
    ]
    return from_log_ratios(logs, margin) if logs else None


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
