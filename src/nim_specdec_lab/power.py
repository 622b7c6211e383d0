"""The power of a paired-rounds comparison: the smallest true speedup it finds (pure, deterministic).

The verdict is `faster` where the t-interval's low end clears 1 + margin, that is where
    (mean - log(1 + margin)) / (s / sqrt(n)) > t(0.975, n - 1)
for the mean and sample sd s of n rounds' log ratios. For a true log speedup d and a spread sigma between
rounds, the left side follows a noncentral t with n - 1 degrees of freedom and noncentrality
(d - log(1 + margin)) * sqrt(n) / sigma, so the probability of `faster` is that distribution's tail beyond
t(0.975, n - 1). The minimum detectable effect (MDE) is the d where that probability is POWER (80%): it
means what its name says, an effect of that size is found in 80% of runs like this one. The tail is
computed by quadrature over the sample sd's chi distribution, so the figure is the same on every run.
"""

from __future__ import annotations

import math
from functools import lru_cache

POWER = 0.8
_STEPS = 2000  # quadrature points over the chi density: the tail to better than 1e-5


def _normal_cdf(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def noncentral_t_tail(df: int, ncp: float, t: float) -> float:
    """P(T > t) for a noncentral t with `df` degrees of freedom and noncentrality `ncp`:
    E over S (S^2 ~ chi-square(df)) of P(Z > t * S / sqrt(df) - ncp)."""
    if df < 1:
        raise ValueError(f"degrees of freedom {df} below 1")
    top = math.sqrt(df) + 12.0  # beyond this the chi density is below 1e-30
    h = top / _STEPS
    log_norm = (df / 2.0 - 1.0) * math.log(2.0) + math.lgamma(df / 2.0)
    total = 0.0
    for i in range(_STEPS + 1):
        s = i * h
        density = 0.0 if s == 0 and df > 1 else math.exp((df - 1) * math.log(s or 1.0) - s * s / 2.0 - log_norm)
        weight = 0.5 if i in (0, _STEPS) else 1.0
        total += weight * density * _normal_cdf(ncp - t * s / math.sqrt(df))
    return total * h


@lru_cache(maxsize=256)
def required_ncp(df: int, t: float, power: float = POWER) -> float:
    """The noncentrality at which the tail beyond `t` holds `power` (bisection: the tail grows with it)."""
    low, high = 0.0, 400.0
    for _ in range(60):
        mid = (low + high) / 2.0
        if noncentral_t_tail(df, mid, t) < power:
            low = mid
        else:
            high = mid
    return high


def mde(log_sd: float, rounds: int, margin: float, t: float, power: float = POWER) -> tuple[float, float]:
    """(faster, slower): the true speedup found `faster` with probability `power` at this spread between
    rounds' log ratios and this many rounds, and its mirror below found `slower` as often."""
    shift = required_ncp(rounds - 1, t, power) * log_sd / math.sqrt(rounds)
    return (1 + margin) * math.exp(shift), (1 - margin) * math.exp(-shift)
