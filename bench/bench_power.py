"""The power and the error rates of the lab's paired rounds, printed as the tables docs/measuring.md and
docs/tuning.md quote.

    python bench/bench_power.py [--worlds 2000] [--record bench/recorded/bench_power.md]

Sections (each between `<!-- figures:NAME -->` and `<!-- /figures -->`; the docs hold the same blocks and
tests/contract/test_docs_figures.py fails where a doc and the recorded output disagree; rerun with --record after
changing the statistics, then copy the blocks into the docs):
- `mde`: for each number of rounds and each true spread of one round's log ratio, the minimum detectable
  effect at that spread (80% power, margin 0.03, nim_specdec_lab.power) and the share of simulated runs
  (plain normal rounds) that find a true speedup of exactly that size; then the share of runs whose
  reported MDE (at the measured spread's 90% upper bound times power.TAILS) is at or above that true MDE
  (its coverage).
- `mde_tails`: that coverage on the lab's three machines (nim_specdec_lab.power_study: normal, t(3) tails,
  and t(3) with loaded rounds and drift), at 3, 5 and 8 rounds, with its 95% Wilson interval.
- `resolve`: the realised power of "about N rounds would tell" (stats.rounds_to_resolve) at a true 1.3x and
  1.2x on each machine, against the 80% promised (power_study.realised_power).
- `machine`: the machine model of the noise tests (nim_specdec_lab.noise_worlds: a start effect per server
  of sd 0.1 shared by its concurrencies, a first server 4% slow, drift within a round, run noise) with
  bench's and tune's order: bench's A/A verdicts other than "no measurable difference", and tune's
  recommendations (two candidates, one equal to off; three concurrencies weighed alike).
- `family`: tune's A/A worlds with 1, 4 and 8 candidates equal to off (concurrencies 1, 2, 4, 8 weighed
  alike, 3 rounds): the share that recommends any speculation, with its 95% Wilson interval.
- `busy`: a candidate truly 1.6x at c=1 and 0.97x at c=4, each half the traffic: the share of worlds that
  recommend it.
The wall time of the 300-world study (tune's decision over 300 worlds of each case of `family` and
`busy`) is printed after the sections, outside them: it is this machine's, not a figure of the method.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

from nim_specdec_lab import power, power_study, stats
from nim_specdec_lab.bench.serve_rounds import order_of as bench_order
from nim_specdec_lab.noise_worlds import HARSH, WORLDS, Machine, figures, simulate, true_log_speedups
from nim_specdec_lab.tune.deciding.decide import Option, decide
from nim_specdec_lab.tune.runs.rounds import order_of as tune_order
from nim_specdec_lab.tune.studies import noise_study

ROUNDS = (2, 3, 4, 5, 6, 8)
SPREADS = (0.05, 0.1, 0.15, 0.2, 0.3)
MARGIN = 0.03
FAMILY_CONCURRENCIES = (1, 2, 4, 8)


def true_mde(spread: float, rounds: int) -> float:
    found = power.mde(spread, rounds, MARGIN, stats.t975(rounds - 1), confidence=None)
    assert found is not None
    return found[0]


def found_share(true: float, spread: float, rounds: int, worlds: int, rng: np.random.Generator) -> tuple[float, float]:
    """(share found faster, share whose reported MDE covers the true one) over normal runs."""
    logs = math.log(true) + rng.normal(0.0, spread, (worlds, rounds))
    results = [stats.from_log_ratios(list(row), MARGIN) for row in logs]
    found = float(np.mean([r.verdict == stats.FASTER for r in results]))
    covered = float(np.mean([r.mde is not None and r.mde[0] >= true for r in results]))
    return found, covered


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


def family(candidates: int, worlds: int, seed: int = 31, machine: Machine = Machine()) -> noise_study.Share:
    weights = {c: 1 / len(FAMILY_CONCURRENCIES) for c in FAMILY_CONCURRENCIES}
    return noise_study.a_a(candidates, FAMILY_CONCURRENCIES, weights, worlds=worlds, seed=seed, machine=machine)


def busy(rounds: int, worlds: int, seed: int = 32) -> noise_study.Share:
    picks = noise_study.recommended({1: [1.6, 0.97]}, (1, 4), {1: 0.5, 4: 0.5}, rounds, worlds=worlds, seed=seed)
    return noise_study.share(picks, {1})


def sections(worlds: int) -> list[tuple[str, list[str]]]:
    rng = np.random.default_rng(7)
    mde = [
        f"MDE at a known spread (80% power, margin 0.03), rounds x sd of one round's log ratio; in brackets the "
        f"share of {worlds} simulated runs that found a true speedup of exactly that MDE, and the share whose "
        "reported MDE (at the measured spread's 90% upper bound times 1.73) was at or above it:",
        "",
        "| rounds | " + " | ".join(f"sd {s:g}" for s in SPREADS) + " |",
        "|---|" + "---|" * len(SPREADS),
    ]
    for n in ROUNDS:
        cells = []
        for s in SPREADS:
            value = true_mde(s, n)
            found, covered = found_share(value, s, n, worlds, rng)
            cells.append(f"{value:.2f}x ({found:.0%}, {covered:.0%})")
        mde.append(f"| {n} | " + " | ".join(cells) + " |")
    machine = [
        f"Machine model ({worlds} worlds each): start sd 0.1, run sd 0.02, first server -4%, drift sd 0.02.",
        "",
        "| rounds | bench A/A: a verdict other than no measurable difference | bench: 1.3x found | bench: 1.5x "
        "found | tune A/A: speculation recommended | tune: 1.3x recommended | tune: 1.5x recommended |",
        "|---|---|---|---|---|---|---|",
    ]
    for n in (2, 3, 5):
        row = [
            bench_share(1.0, n, worlds, True),
            bench_share(1.3, n, worlds, False),
            bench_share(1.5, n, worlds, False),
            tune_share(1.0, n, worlds),
            tune_share(1.3, n, worlds),
            tune_share(1.5, n, worlds),
        ]
        machine.append(f"| {n} | " + " | ".join(f"{v:.1%}" for v in row) + " |")
    fam = [
        f"A/A, every candidate equal to off ({2 * worlds} worlds each, 3 rounds, concurrencies 1, 2, 4, 8 weighed "
        "alike): speculation recommended, with its 95% interval, on the normal machine and on the harsh one "
        "(t(3) tails, a quarter of the rounds loaded, drift):",
        "",
        "| candidates | recommended, normal | recommended, harsh |",
        "|---|---|---|",
    ]
    fam += [f"| {k} | {family(k, 2 * worlds)} | {family(k, 2 * worlds, machine=HARSH)} |" for k in (1, 4, 8)]
    loss = [
        f"1.6x at c=1 and a true 0.97x at c=4, each half the traffic ({2 * worlds} worlds each): recommended in",
        "",
        "| rounds | recommended |",
        "|---|---|",
    ]
    loss += [f"| {n} | {busy(n, 2 * worlds)} |" for n in (3, 5)]
    tails = [
        f"The reported MDE at or above the MDE at the true spread ({worlds} runs each; one candidate against off, "
        "tune's order, concurrencies 1 and 4 weighed alike), with its 95% interval:",
        "",
        "| noise | 3 rounds | 5 rounds | 8 rounds |",
        "|---|---|---|---|",
    ]
    for label, found in WORLDS.items():
        cells = [str(power_study.mde_coverage(found, n, worlds, seed=n)) for n in (3, 5, 8)]
        tails.append(f"| {label} | " + " | ".join(cells) + " |")
    resolve = [
        f'"About N rounds would tell" after 3 rounds that could not tell a true gain ({worlds} runs each): the '
        "runs that said N, the median N, and the share of fresh runs of N rounds that told it (promised: 80%):",
        "",
        "| noise | true speedup | said N | median N | realised power |",
        "|---|---|---|---|---|",
    ]
    for label, found in WORLDS.items():
        for true in (1.3, 1.2):
            got = power_study.realised_power(found, true, worlds=worlds)
            middle = "-" if got.median_rounds is None else f"{got.median_rounds:g}"
            resolve.append(f"| {label} | {true}x | {got.said} | {middle} | {got.power} |")
    return [
        ("mde", mde),
        ("mde_tails", tails),
        ("resolve", resolve),
        ("machine", machine),
        ("family", fam),
        ("busy", loss),
    ]


def render(found: list[tuple[str, list[str]]]) -> str:
    return "".join(f"<!-- figures:{name} -->\n" + "\n".join(lines) + "\n<!-- /figures -->\n\n" for name, lines in found)


def study_seconds(worlds: int = 300) -> float:
    """The 300-world study: tune's decision over `worlds` worlds of each family and busy case."""
    start = time.perf_counter()
    for k in (1, 4, 8):
        family(k, worlds)
    for n in (3, 5):
        busy(n, worlds)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", type=int, default=2000)
    parser.add_argument("--record", type=Path, default=None, help="also write the sections to this file")
    args = parser.parse_args()
    text = render(sections(args.worlds))
    print(text, end="")
    if args.record is not None:
        args.record.parent.mkdir(parents=True, exist_ok=True)
        args.record.write_text(f"<!-- python bench/bench_power.py --worlds {args.worlds} -->\n\n" + text)
    print(f"the 300-world study (1, 4, 8 A/A candidates; the busy loss at 3 and 5 rounds): {study_seconds():.1f} s")


if __name__ == "__main__":
    main()
