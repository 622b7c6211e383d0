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
Beside that normal machine, a harsh one (`HARSH`) the lab's decisions must also survive, since a real shared
machine is not normal: start and run noise with Student t tails (`tails` degrees of freedom, scaled to the
same sd: t(3) puts 1.5% of draws beyond 3 sd where the normal puts 0.3%), a share of rounds on a loaded
machine (`loaded_share`, every server of such a round `loaded_factor` times as noisy), and a drift across
the whole tune (a slope per server started, sd `tune_drift_sd` per world), which no pairing within a round
cancels entirely.
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
    tails: float | None = None  # Student t degrees of freedom of start and run noise; None: normal
    loaded_share: float = 0.0  # the chance that a round runs on a loaded machine
    loaded_factor: float = 3.0  # how many times noisier every server of a loaded round is
    tune_drift_sd: float = 0.0  # sd of a world's log drift per server started, across the whole tune


NORMAL = Machine()
HEAVY = Machine(tails=3.0)  # t(3) start and run noise at the normal machine's sd
HARSH = Machine(tails=3.0, loaded_share=0.25, loaded_factor=3.0, tune_drift_sd=0.005)
WORLDS = {"normal": NORMAL, "t(3) tails": HEAVY, "t(3), loaded rounds, drift": HARSH}


def _noise(rng: np.random.Generator, sd: float, tails: float | None, shape: tuple[int, ...]) -> np.ndarray:
    if tails is None:
        return rng.normal(0.0, sd, shape)
    return rng.standard_t(tails, shape) * (sd * np.sqrt((tails - 2.0) / tails))


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
    start = _noise(rng, machine.start_sd, machine.tails, (worlds, rounds, configs, 1))
    slope = rng.normal(0.0, machine.drift_sd, (worlds, rounds, 1, 1))
    run = _noise(rng, machine.run_sd, machine.tails, (worlds, rounds, configs, conc))
    if machine.loaded_share > 0:  # drawn after the normal machine's draws: its worlds stay as they were
        loaded = rng.random((worlds, rounds, 1, 1)) < machine.loaded_share
        scale = np.where(loaded, machine.loaded_factor, 1.0)
        start, run = start * scale, run * scale
    log = start + run + (effect[place] + 0.0)[None, :, :, None] + slope * place[None, :, :, None]
    if machine.tune_drift_sd > 0:
        started = (np.arange(rounds)[:, None] * configs + place)[None, :, :, None]  # servers started before
        log = log + rng.normal(0.0, machine.tune_drift_sd, (worlds, 1, 1, 1)) * started
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
