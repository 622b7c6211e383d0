"""How often the interval shown for tune's recommendation covers the true speedup of the configuration it
recommends, counted over the simulated worlds in which it recommends one (pure; numpy and tune.deciding.decide).

Each world is one tune on a machine of nim_specdec_lab.noise_worlds (normal, t(3)-tailed or harsh), servers
started in tune's order, decided by the same call tune makes. Where it recommends a configuration, the
study checks the interval tune shows for it (Decision.picked: simultaneous over the candidates) and, for
comparison, that configuration's own interval, against its true log speedup on the traffic (the weighted
mean of its true log speedups over the concurrencies). Coverage is a share of the worlds that picked,
with its 95% Wilson interval (noise_study.Share): the coverage that matters is the one given the pick.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

from nim_specdec_lab.noise_worlds import Machine, figures, simulate, true_log_speedups
from nim_specdec_lab.tune.deciding.decide import Option, decide
from nim_specdec_lab.tune.runs.rounds import order_of
from nim_specdec_lab.tune.studies.noise_study import MARGIN, Share


@dataclass(frozen=True)
class Coverage:
    picked: Share  # the interval shown for the recommendation covers its truth, of the worlds that picked
    own: Share  # its own per-candidate interval does
    worlds: int


def _covers(interval: tuple[float, float] | None, truth: float) -> bool:
    return interval is not None and interval[0] <= truth <= interval[1]


def coverage(
    ratios: Mapping[int, Sequence[float]],
    concurrencies: Sequence[int],
    weights: Mapping[int, float],
    rounds: int,
    machine: Machine,
    worlds: int,
    seed: int = 1,
    margin: float = MARGIN,
) -> Coverage:
    """`ratios[k]`: candidate k's true speedup over off at each concurrency (k from 1)."""
    lineup = list(range(1 + len(ratios)))
    orders = [order_of(lineup, r) for r in range(1, rounds + 1)]
    true_log = true_log_speedups(ratios, len(concurrencies))
    measured = simulate(machine, true_log, orders, worlds, seed)
    total = math.fsum(weights[c] for c in concurrencies)
    truth = {
        k: math.exp(math.fsum(weights[c] * true_log[k, i] for i, c in enumerate(concurrencies)) / total) for k in ratios
    }
    picked = own = hits = 0
    for w in range(worlds):
        off = figures(measured, w, 0, concurrencies)
        options = [Option(str(k), {}, figures(measured, w, k, concurrencies)) for k in ratios]
        decision = decide(off, options, weights, margin)
        if decision.recommended is None:
            continue
        k = int(decision.recommended.name)
        traffic = decision.comparison(decision.recommended.name).traffic
        hits += 1
        picked += _covers(decision.picked(), truth[k])
        own += _covers(None if traffic is None else traffic.interval, truth[k])
    return Coverage(Share(picked, max(hits, 1)), Share(own, max(hits, 1)), worlds)
