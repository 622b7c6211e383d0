"""Reference figures for the lab's statistics from scipy.stats, computed the long way (root finding on the
distributions' tails, not the inverse functions the lab calls), so a test compares the lab with something
other than itself."""

from __future__ import annotations

import math

from scipy import optimize, stats


def t975(df: int) -> float:
    return float(stats.t.ppf(0.975, df))


def ncp_for_power(df: int, t: float, power: float = 0.8) -> float:
    """The noncentrality whose noncentral t tail beyond `t` holds `power`, by Brent's root finding."""
    return float(optimize.brentq(lambda ncp: stats.nct.sf(t, df, ncp) - power, 0.0, 200.0, xtol=1e-10))


def spread_upper(sd: float, df: int, confidence: float = 0.9) -> float:
    """The upper confidence bound of a normal spread from its sample sd over `df` degrees of freedom."""
    return sd * math.sqrt(df / float(stats.chi2.ppf(1.0 - confidence, df)))


# The machine the lab's spread bound allows for: a quarter of the rounds three times as noisy, whose variance
# is 0.75 + 0.25 x 9 = 3 times a quiet round's.
TAILS = math.sqrt(0.75 * 1.0 + 0.25 * 3.0**2)


def mde(sd: float, rounds: int, margin: float = 0.03, upper: bool = True) -> tuple[float, float]:
    """(faster, slower) MDE at 80% power; at the spread's 90% upper bound times TAILS unless `upper` is False
    (then at `sd` taken as the truth)."""
    sigma = spread_upper(sd, rounds - 1) * TAILS if upper else sd
    shift = ncp_for_power(rounds - 1, t975(rounds - 1)) * sigma / math.sqrt(rounds)
    return (1 + margin) * math.exp(shift), (1 - margin) * math.exp(-shift)


def p_faster(logs: list[float], margin: float = 0.03) -> float:
    """One-sided p of "no more than 1 + margin" by scipy's one-sample t-test."""
    return float(stats.ttest_1samp(logs, math.log1p(margin), alternative="greater").pvalue)
