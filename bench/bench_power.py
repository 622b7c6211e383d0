"""The power of the lab's paired rounds, printed as the table docs/measuring.md shows.

    python bench/bench_power.py [--worlds 2000]

For each number of rounds and each spread of one round's log ratio (the sd of log(candidate / baseline)
between rounds), the minimum detectable effect (MDE: the true speedup found `faster` with 80% probability,
nim_specdec_lab.power, margin 0.03) and, as a check, the share of simulated runs that find a true speedup of
exactly that size (plain normal rounds). Then the machine model of the noise tests
(nim_specdec_lab.noise_worlds: a start effect per server of sd 0.1 shared by its concurrencies, a first
server 4% slow, drift within a round, run noise) with bench's and tune's order: the A/A share of verdicts
other than "no measurable difference" (bench) and of speculation recommended (tune, two A/A candidates,
three concurrencies weighed alike), and the found share of a true 1.3x and 1.5x.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from nim_specdec_lab import stats
from nim_specdec_lab.noise_worlds import Machine, figures, simulate, true_log_speedups
from nim_specdec_lab.bench.serve_rounds import order_of as bench_order
from nim_specdec_lab.tune.decide import Option, decide
from nim_specdec_lab.tune.rounds import order_of as tune_order

ROUNDS = (2, 3, 4, 5, 6, 8)
SPREADS = (0.05, 0.1, 0.15, 0.2, 0.3)
MARGIN = 0.03


def _unit_sd(n: int) -> list[float]:
    raw = [i - (n - 1) / 2 for i in range(n)]
    sd = math.sqrt(sum(x * x for x in raw) / (n - 1))
    return [x / sd for x in raw]


def mde(spread: float, rounds: int) -> float:
    return stats.paired([(1.0, math.exp(spread * z)) for z in _unit_sd(rounds)], MARGIN).mde[0]


def found_share(true: float, spread: float, rounds: int, worlds: int, rng: np.random.Generator) -> float:
    logs = math.log(true) + rng.normal(0.0, spread, (worlds, rounds))
    return float(np.mean([stats.from_log_ratios(list(row), MARGIN).verdict == stats.FASTER for row in logs]))


def bench_share(ratio: float, rounds: int, worlds: int, verdict_other: bool) -> float:
    machine = Machine()
    orders = [bench_order(r, [0, 1]) for r in range(1, rounds + 1)]
    measured = simulate(machine, true_log_speedups({1: [ratio]}, 1), orders, worlds, 21)
    verdicts = [
        stats.paired(list(zip(measured[w, :, 0, 0], measured[w, :, 1, 0])), MARGIN).verdict for w in range(worlds)
    ]
    if verdict_other:
        return sum(v != stats.NO_DIFFERENCE for v in verdicts) / worlds
    return sum(v == stats.FASTER for v in verdicts) / worlds


def tune_share(ratio: float, rounds: int, worlds: int) -> float:
    concurrencies = (1, 4, 16)
    ratios = {1: [ratio] * 3, 2: [1.0] * 3}
    orders = [tune_order([0, 1, 2], r) for r in range(1, rounds + 1)]
    measured = simulate(Machine(), true_log_speedups(ratios, 3), orders, worlds, 22)
    weights = {c: 1 / 3 for c in concurrencies}
    hits = 0
    for w in range(worlds):
        options = [Option(str(k), {}, figures(measured, w, k, concurrencies)) for k in ratios]
        chosen = decide(figures(measured, w, 0, concurrencies), options, weights, MARGIN).recommended
        hits += chosen is not None and (ratio == 1.0 or chosen.name == "1")
    return hits / worlds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", type=int, default=2000)
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    print("MDE (80% power, margin 0.03): rounds x spread of one round's log ratio; (found share at the MDE)")
    print("| rounds | " + " | ".join(f"sd {s:g}" for s in SPREADS) + " |")
    print("|---|" + "---|" * len(SPREADS))
    for n in ROUNDS:
        cells = []
        for s in SPREADS:
            value = mde(s, n)
            cells.append(f"{value:.2f}x ({found_share(value, s, n, args.worlds, rng):.0%})")
        print(f"| {n} | " + " | ".join(cells) + " |")
    print()
    print(f"Machine model ({args.worlds} worlds each): start sd 0.1, run sd 0.02, first server -4%, drift sd 0.02")
    print(
        "| rounds | bench A/A not 'no difference' | bench 1.3x faster | bench 1.5x faster | tune A/A recommends "
        "| tune 1.3x recommended | tune 1.5x recommended |"
    )
    print("|---|---|---|---|---|---|---|")
    for n in (2, 3, 5):
        row = [
            bench_share(1.0, n, args.worlds, True),
            bench_share(1.3, n, args.worlds, False),
            bench_share(1.5, n, args.worlds, False),
            tune_share(1.0, n, args.worlds),
            tune_share(1.3, n, args.worlds),
            tune_share(1.5, n, args.worlds),
        ]
        print(f"| {n} | " + " | ".join(f"{v:.1%}" for v in row) + " |")


if __name__ == "__main__":
    main()
