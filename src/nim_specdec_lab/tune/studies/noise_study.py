"""tune's decision over simulated worlds: how often it recommends what (pure; numpy and decide.decide).

Each world is one tune of `rounds` rounds on the machine model of nim_specdec_lab.noise_worlds (a start
effect per server shared by its concurrencies, a slow first server, drift within a round, run noise),
servers started in tune's order (tune.runs.rounds.order_of), and decided by the same call tune makes. The
share of worlds comes with its 95% Wilson interval: a Monte Carlo figure is only as sure as its count of
worlds. The tests run small fixed-seed studies; bench/bench_noise_worlds.py prints the large ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

from nim_specdec_lab.noise_worlds import Machine, figures, simulate, true_log_speedups
from nim_specdec_lab.tune.deciding.decide import Option, decide
from nim_specdec_lab.tune.runs.rounds import order_of

MARGIN = 0.03
Z95 = 1.959964


@dataclass(frozen=True)
class Share:
    hits: int
    worlds: int

    @property
    def rate(self) -> float:
        return self.hits / self.worlds

    def interval(self) -> tuple[float, float]:
        """The 95% Wilson score interval of the rate (honest near 0, where the normal one is not)."""
        n, p, z = self.worlds, self.rate, Z95
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        return max(0.0, centre - half), min(1.0, centre + half)

    def __str__(self) -> str:
        low, high = self.interval()
        return f"{self.rate:.1%} [{low:.1%}, {high:.1%}] ({self.hits} of {self.worlds})"


def recommended(
    ratios: Mapping[int, Sequence[float]],
    concurrencies: Sequence[int],
    weights: Mapping[int, float],
    rounds: int = 3,
    machine: Machine = Machine(),
    worlds: int = 1000,
    seed: int = 1,
    rotate: bool = True,
    margin: float = MARGIN,
) -> list[int | None]:
    """The configuration recommended in each world: its index in `ratios` (configuration k's true speedup
    over off at each concurrency), None for off."""
    lineup = list(range(1 + len(ratios)))
    orders = [order_of(lineup, r) if rotate else lineup for r in range(1, rounds + 1)]
    measured = simulate(machine, true_log_speedups(ratios, len(concurrencies)), orders, worlds, seed)
    out: list[int | None] = []
    for w in range(worlds):
        off = figures(measured, w, 0, concurrencies)
        options = [Option(str(k), {"k": k}, figures(measured, w, k, concurrencies)) for k in ratios]
        chosen = decide(off, options, weights, margin).recommended
        out.append(None if chosen is None else int(chosen.name))
    return out


def share(picks: Sequence[int | None], which: set[int | None]) -> Share:
    return Share(sum(p in which for p in picks), len(picks))


def a_a(candidates: int, concurrencies: Sequence[int], weights: Mapping[int, float], **kwargs) -> Share:
    """Worlds where every candidate equals off: the share that recommends any speculation (family-wise)."""
    ratios = {k: [1.0] * len(concurrencies) for k in range(1, candidates + 1)}
    return share(recommended(ratios, concurrencies, weights, **kwargs), set(ratios))
