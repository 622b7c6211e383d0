"""The power of a paired-rounds comparison: the smallest true speedup it finds (pure, deterministic).

The verdict is `faster` where the t-interval's low end clears 1 + margin, that is where
    (mean - log(1 + margin)) / (s / sqrt(n)) > t(0.975, n - 1)
for the mean and sample sd s of n rounds' log ratios. For a true log speedup d and a spread sigma between
rounds, the left side follows a noncentral t with n - 1 degrees of freedom and noncentrality
(d - log(1 + margin)) * sqrt(n) / sigma, so the probability of `faster` is that distribution's tail beyond
t(0.975, n - 1). The noncentrality where that tail holds POWER (80%) is scipy's `nctdtrinc`.

The spread is not known, only measured: with 3 rounds its estimate has 2 degrees of freedom and may be a
third of the truth. A power figure computed at the measured spread would promise far more than the data
support, so the spread used for the MDE is its upper confidence bound at SPREAD_CONFIDENCE (90%) from the
chi-square distribution of the sample variance, s * sqrt(df / chi2_{0.10}(df)), times TAILS. The
chi-square bound holds for normal rounds only: a machine whose rounds are sometimes loaded has a spread
that quiet rounds do not show, and no bound computed from the rounds measured can see the rounds that did
not happen. TAILS is the stated model of that machine: up to LOADED_SHARE (a quarter) of the rounds
LOAD (3) times as noisy spread all rounds by sqrt(1 - 1/4 + 1/4 x 9) = 1.73 times what quiet rounds do.
The minimum detectable effect (MDE) then means: at any spread the data leave plausible at 90% on such a
machine, an effect of that size is found in 80% of runs like this one. Its coverage (the reported MDE at or
above the MDE at the true spread) is measured on normal, t(3)-tailed and loaded rounds by
bench/bench_power.py and tests/lab/test_stats.py: at least 90% on each.

"About N rounds would tell" (`rounds_to_resolve`) is a forecast, not a bound: the fewest rounds with 80%
power at the measured effect and the measured spread (its point estimate). At the spread's upper bound it
asked for 33-39 rounds where 5 already told a true 1.3x half the time or more; its realised power, the
share of runs of N rounds that tell the true effect, is measured beside the promise (bench/bench_power.py).

scipy.special is imported where the figures are computed, never at module import: the launcher imports no
lab code, and the lab's commands that print no interval never pay for it.
"""

from __future__ import annotations

import math
from functools import lru_cache

POWER = 0.8
SPREAD_CONFIDENCE = 0.9
LOADED_SHARE, LOAD = 0.25, 3.0  # the machine TAILS allows for: a quarter of the rounds 3 times as noisy
TAILS = math.sqrt(1.0 - LOADED_SHARE + LOADED_SHARE * LOAD * LOAD)
MOST_ROUNDS = 100  # rounds_to_resolve looks no further


def _special():  # the scipy.special module, imported on first use
    from scipy import special  # noqa: PLC0415 - +178 modules (~190 ms) on --help

    return special


@lru_cache(maxsize=512)
def t_quantile(df: int, p: float) -> float:
    """The `p` quantile of Student's t with `df` degrees of freedom (scipy.special.stdtrit)."""
    if df < 1:
        raise ValueError(f"degrees of freedom {df} below 1")
    return float(_special().stdtrit(df, p))


def t_tail(df: int, t: float) -> float:
    """P(T > t) for Student's t with `df` degrees of freedom (scipy.special.stdtr)."""
    if df < 1:
        raise ValueError(f"degrees of freedom {df} below 1")
    return float(_special().stdtr(df, -t))


def noncentral_t_tail(df: int, ncp: float, t: float) -> float:
    """P(T > t) for a noncentral t with `df` degrees of freedom and noncentrality `ncp` (scipy.special.nctdtr)."""
    if df < 1:
        raise ValueError(f"degrees of freedom {df} below 1")
    return float(1.0 - _special().nctdtr(df, ncp, t))


@lru_cache(maxsize=512)
def required_ncp(df: int, t: float, power: float = POWER) -> float:
    """The noncentrality at which the tail beyond `t` holds `power`."""
    if df < 1:
        raise ValueError(f"degrees of freedom {df} below 1")
    return float(_special().nctdtrinc(df, 1.0 - power, t))


@lru_cache(maxsize=512)
def spread_factor(df: int, confidence: float = SPREAD_CONFIDENCE) -> float:
    """The upper confidence bound of a spread over its estimate: sqrt(df / the chi-square quantile at
    1 - confidence), 3.08 at 2 degrees of freedom, 1.37 at 10."""
    if df < 1:
        raise ValueError(f"degrees of freedom {df} below 1")
    return math.sqrt(df / float(_special().chdtri(df, confidence)))


def mde(
    log_sd: float,
    rounds: int,
    margin: float,
    t: float,
    power: float = POWER,
    confidence: float | None = SPREAD_CONFIDENCE,
) -> tuple[float, float] | None:
    """(faster, slower): the true speedup found `faster` with probability `power` at `rounds` rounds and a
    spread between rounds' log ratios as large as `log_sd` allows (its upper confidence bound at
    `confidence` over rounds - 1 degrees of freedom, times TAILS; None: `log_sd` taken as the true spread,
    for a design table), and its mirror below found `slower` as often. None where the figure would leave the range of a
    double (a spread no measurement in range gives)."""
    factor = 1.0 if confidence is None else spread_factor(rounds - 1, confidence) * TAILS
    shift = required_ncp(rounds - 1, t, power) * log_sd * factor / math.sqrt(rounds)
    if not math.isfinite(shift) or shift > 700.0:
        return None
    return (1 + margin) * math.exp(shift), (1 - margin) * math.exp(-shift)


def rounds_to_resolve(
    log_sd: float, measured_rounds: int, speedup: float, margin: float, most: int = MOST_ROUNDS
) -> int | None:
    """The fewest rounds with `POWER` to find a true `speedup` (or slowdown) at the spread `log_sd` measured
    over `measured_rounds` rounds (its point estimate: a forecast, not a bound); None beyond `most`, for a
    speedup inside the margin or without an interval."""
    if 1 - margin <= speedup <= 1 + margin or measured_rounds < 2:
        return None
    need = abs(math.log(speedup / (1 + margin) if speedup > 1 else speedup / (1 - margin)))
    for n in range(2, most + 1):
        if required_ncp(n - 1, t_quantile(n - 1, 0.975)) * log_sd / math.sqrt(n) <= need:
            return n
    return None
