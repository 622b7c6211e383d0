"""A model of the machine the lab measures on, for testing its decisions and printing its power (pure numpy).

A world is one run of rounds: in each round every configuration gets a fresh server, started in that
round's order, and each server measures every concurrency. What moves a measured figure, in log:
- the server's start (sd `start_sd`): compile, page cache, placement, shared by all of that server's
  concurrencies, which is why they cannot count as independent;
- the server's position in its round (`position[p]`, the first server typically slow: a cold machine);
- a drift within the round (a slope per position, sd `drift_sd` per round): the machine slowing down or
  speeding up while the round runs;
- each run's own noise (sd `run_sd`);
- and the configuration's true log speedup at that concurrency.
A factor shared by every server of a round cancels in every ratio, so it is left out: a model made only of
that (as the lab's first noise tests were) cannot tell a good design from a bad one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np


@dataclass(frozen=True)
class Machine:
    start_sd: float = 0.10
    run_sd: float = 0.02
    position: tuple[float, ...] = (-0.04,)  # log effect of the 1st, 2nd, ... server of a round; 0 beyond
    drift_sd: float = 0.02


def simulate(
    machine: Machine,
    true_log: np.ndarray,
    orders: Sequence[Sequence[int]],
    worlds: int,
    seed: int,
) -> np.ndarray:
    """Measured tokens/s, shape (worlds, rounds, configurations, concurrencies). `true_log[k, c]`: the true
    log speedup of configuration k over configuration 0 at concurrency index c; `orders[r]`: the
    configurations' indices in round r's order of start."""
    rng = np.random.default_rng(seed)
    configs, conc = true_log.shape
    rounds = len(orders)
    place = np.zeros((rounds, configs), dtype=int)  # the position of configuration k in round r
    for r, order in enumerate(orders):
        for p, k in enumerate(order):
            place[r, k] = p
    effect = np.array([machine.position[p] if p < len(machine.position) else 0.0 for p in range(configs)])
    start = rng.normal(0.0, machine.start_sd, (worlds, rounds, configs, 1))
    slope = rng.normal(0.0, machine.drift_sd, (worlds, rounds, 1, 1))
    run = rng.normal(0.0, machine.run_sd, (worlds, rounds, configs, conc))
    log = start + run + (effect[place] + 0.0)[None, :, :, None] + slope * place[None, :, :, None]
    base = 100.0 * np.arange(1, conc + 1, dtype=float)
    return base * np.exp(log + true_log[None, None, :, :])


def figures(measured: np.ndarray, world: int, config: int, concurrencies: Sequence[int]) -> dict[int, dict[int, float]]:
    """One configuration's figures in one world, as the lab holds them: concurrency -> round -> tokens/s."""
    block = measured[world, :, config, :]
    return {c: {r + 1: float(block[r, i]) for r in range(block.shape[0])} for i, c in enumerate(concurrencies)}


def true_log_speedups(ratios: Mapping[int, Sequence[float]], concurrencies: int) -> np.ndarray:
    """`ratios[k]`: configuration k's true speedup at each concurrency (configuration 0 is the baseline)."""
    out = np.zeros((1 + len(ratios), concurrencies))
    for k, values in ratios.items():
        out[k] = np.log(np.asarray(values, dtype=float))
    return out
