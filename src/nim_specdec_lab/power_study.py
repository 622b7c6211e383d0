"""Whether the lab's power statements hold on machines that are not normal (pure; numpy and the lab's
statistics): the MDE's coverage and the realised power of "about N rounds would tell".

A run here is one candidate against off over the rounds of a machine of nim_specdec_lab.noise_worlds
(normal, t(3)-tailed, or harsh: t(3), a quarter of the rounds loaded, drift), servers in tune's order,
concurrencies 1 and 4 weighed alike: each round's traffic log ratio, then stats.from_log_ratios.
- MDE coverage: the share of runs whose reported MDE (power.mde at the spread's bound) is at or above the
  MDE at the machine's true spread (the root of the mean sample variance over many runs: unbiased for any
  tails with a variance).
- Realised power: of the runs of `measured` rounds at a true speedup that cannot tell it and read a gain,
  each says how many rounds would tell it (stats.rounds_to_resolve); each such run is followed by one fresh
  run of that many rounds on the same machine and truth, and the realised power is the share of those that
  tell it (`faster`).
Each rate comes with its 95% Wilson interval (tune.studies.noise_study.Share).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

import numpy as np

from nim_specdec_lab import power, stats
from nim_specdec_lab.noise_worlds import Machine, simulate, true_log_speedups
from nim_specdec_lab.tune.runs.rounds import order_of
from nim_specdec_lab.tune.studies.noise_study import MARGIN, Share


def round_logs(machine: Machine, speedup: float, rounds: int, worlds: int, seed: int) -> np.ndarray:
    """Each run's per-round traffic log ratio, shape (worlds, rounds)."""
    orders = [order_of([0, 1], r) for r in range(1, rounds + 1)]
    measured = simulate(machine, true_log_speedups({1: [speedup, speedup]}, 2), orders, worlds, seed)
    return np.log(measured[:, :, 1, :] / measured[:, :, 0, :]).mean(axis=2)


def true_spread(machine: Machine, rounds: int, worlds: int = 100_000, seed: int = 101) -> float:
    """The spread of one round's traffic log ratio on this machine: sqrt of the mean sample variance."""
    logs = round_logs(machine, 1.0, rounds, worlds, seed)
    return float(math.sqrt(np.mean(logs.var(axis=1, ddof=1))))


def mde_coverage(machine: Machine, rounds: int, worlds: int, seed: int = 1, margin: float = MARGIN) -> Share:
    """The share of runs whose reported MDE is at or above the MDE at the true spread."""
    truth = power.mde(true_spread(machine, rounds), rounds, margin, stats.t975(rounds - 1), confidence=None)
    assert truth is not None
    covered = 0
    for row in round_logs(machine, 1.0, rounds, worlds, seed):
        found = stats.from_log_ratios([float(x) for x in row], margin)
        covered += found.mde is not None and found.mde[0] >= truth[0]
    return Share(covered, worlds)


@dataclass(frozen=True)
class Realised:
    power: Share  # fresh runs of the said rounds that told the true speedup
    said: int  # runs that said a number of rounds
    median_rounds: float | None


def realised_power(
    machine: Machine,
    speedup: float,
    measured: int = 3,
    worlds: int = 1000,
    seed: int = 5,
    margin: float = MARGIN,
) -> Realised:
    """The realised power of "about N rounds would tell" at a true `speedup` (module docstring)."""
    said: list[int] = []
    for row in round_logs(machine, speedup, measured, worlds, seed):
        found = stats.from_log_ratios([float(x) for x in row], margin)
        if found.verdict == stats.FASTER or found.speedup <= 1 + margin:
            continue
        n = stats.rounds_to_resolve(found)
        if n is not None and n > measured:
            said.append(n)
    hits = 0
    for n in sorted(set(said)):  # one fresh run per run that said n: the rate counts the runs that said one
        runs = round_logs(machine, speedup, n, said.count(n), seed + 1000 + n)
        hits += sum(stats.from_log_ratios([float(x) for x in row], margin).verdict == stats.FASTER for row in runs)
    return Realised(Share(hits, max(1, len(said))), len(said), statistics.median(said) if said else None)
