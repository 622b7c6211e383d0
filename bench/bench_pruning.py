"""What pruning costs tune's answer: the pruned tune against the full sweep in the same simulated worlds,
printed as the table docs/tuning.md quotes.

    python bench/bench_pruning.py [--worlds 2000] [--record bench/recorded/bench_pruning.md]

One section, `pruning` (between `<!-- figures:pruning -->` and `<!-- /figures -->`; tests/contract/test_docs_figures.py
fails where the doc and the recorded output disagree): for each world and `--max-k`, the share of worlds in
which the pruned tune (tune.lineup.pruning: the first-round screen, drops on intervals, a server budget) recommends
what the full sweep (every configuration in every round) does, with its 95% Wilson interval; the servers the
pruned tune started (median and most) against the full sweep's; and the share of worlds in which the draft
was served once. Servers are counted as tune counts them (a draft's K = 0 server and the model's choice
included); the budget is tune's default (tune.lineup.pruning.default_budget), and, for comparison, one sweep plus
one, the default before it counted the rounds (what tune now says of it before starting, and with which
--max-servers it would serve every round). The machine is the noise studies' (nim_specdec_lab.noise_worlds.Machine),
3 rounds, concurrencies 1 and 4 weighed alike. A second section, `screen`: the share of first rounds (100 x
--worlds of them) in which a candidate truly equal to off, 0.97x or 1.26x measures below the screen's 0.6x,
on each noise world of nim_specdec_lab.noise_worlds.WORLDS. A third, `pruning_family`: the pruned tune's A/A worlds with
1, 4 and 8 candidates equal to off: the share that recommends any speculation (family-wise).
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import numpy as np

from nim_specdec_lab.noise_worlds import HARSH, WORLDS, simulate, true_log_speedups
from nim_specdec_lab.tune.lineup import pruning
from nim_specdec_lab.tune.studies.noise_study import Share
from nim_specdec_lab.tune.studies.pruning_study import compare

CONCURRENCIES = (1, 4)
WEIGHTS = {1: 0.5, 4: 0.5}
ROUNDS = 3
# Candidate 1 a draft model (with a K = 0 server in round 1), 2 n-gram at its largest K, 3 the model's schedule.
DEMO = {1: [0.3, 0.3], 2: [1.3, 1.25], 3: [1.35, 1.3]}  # useless draft, n-gram at K = 4, the model's schedule
CLOSE = {1: [0.9, 0.9], 2: [1.3, 1.25], 3: [1.3, 1.28]}  # a draft kept (its K = 0 server served), a close race
SHAPES = (("demo shape", DEMO, 3), ("close race, draft kept at 0.9x", CLOSE, 3))
OTHERS = (
    ("useless draft, n-gram 1.1x, schedule 1.12x", {1: [0.3, 0.3], 2: [1.1, 1.1], 3: [1.12, 1.12]}, 3),
    ("useless draft, n-gram 0.8x, model chose off", {1: [0.3, 0.3], 2: [0.8, 0.8]}, None),
    ("draft 0.65x, n-gram 1.3x, model's choice n-gram", {1: [0.65, 0.65], 2: [1.3, 1.3]}, 2),
)


def _row(label: str, ratios, proposal, budget: int, worlds: int, machine=None) -> str:
    more = {} if machine is None else {"machine": machine}
    study = compare(
        ratios, CONCURRENCIES, WEIGHTS, proposal=proposal, budget=budget, worlds=worlds, seed=3, zero_k=(1,), **more
    )
    once = Share(sum(served["1"] == 1 for served in study.rounds_served), worlds)
    return (
        f"| {label} (budget {budget}) | {study.agreement()} | {statistics.median(study.servers):.0f}, "
        f"{max(study.servers)} | {study.full_servers} | {once.rate:.1%} |"
    )


def pruning_section(worlds: int, max_ks=(1, 2, 3, 4)) -> list[str]:
    lines = [
        "| world | same as the full sweep | servers, pruned (median, most) | servers, full sweep | draft served once |",
        "|---|---|---|---|---|",
    ]
    candidates, zero_k = 2, 1  # a draft model and n-gram, the model's choice a configuration of its own
    for label, ratios, proposal in SHAPES:
        for max_k in max_ks:
            sweep = pruning.sweep_servers([max_k, max_k])
            budget = pruning.default_budget(sweep, candidates, zero_k, ROUNDS)
            lines.append(_row(f"{label}, --max-k {max_k}", ratios, proposal, budget, worlds))
            old = sweep + 1
            if old < budget:
                lines.append(_row(f"{label}, --max-k {max_k}, one sweep plus one", ratios, proposal, old, worlds))
    for label, ratios, proposal in SHAPES:
        budget = pruning.default_budget(pruning.sweep_servers([4, 4]), candidates, zero_k, ROUNDS)
        lines.append(_row(f"{label}, --max-k 4, harsh machine", ratios, proposal, budget, worlds, HARSH))
    for label, ratios, proposal in OTHERS:
        budget = pruning.default_budget(pruning.sweep_servers([4, 4]), candidates, zero_k, ROUNDS)
        lines.append(_row(f"{label}, --max-k 4", ratios, proposal, budget, worlds))
    return lines


def screen_section(rounds: int) -> list[str]:
    """The share of first rounds in which a candidate of each true speedup measures below pruning.SCREEN of
    off on even traffic (off first, the candidate second, as in tune's round 1), per noise world."""
    lines = [
        "| noise | true 1.0x screened out | true 0.97x | true 1.26x |",
        "|---|---|---|---|",
    ]
    for label, machine in WORLDS.items():
        cells = []
        for true in (1.0, 0.97, 1.26):
            measured = simulate(machine, true_log_speedups({1: [true, true]}, 2), [[0, 1]], rounds, seed=5)
            ratio = np.exp(np.log(measured[:, 0, 1, :] / measured[:, 0, 0, :]).mean(axis=1))
            found = Share(int((ratio < pruning.SCREEN).sum()), rounds)
            low, high = found.interval()
            shown = f"{found.rate:.3%} [{low:.3%}, {high:.3%}] ({found.hits} of {rounds})"
            cells.append(shown + (f", 1 in {rounds / found.hits:,.0f}" if found.hits else ""))
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def family_lines(worlds: int) -> list[str]:
    out = []
    for candidates in (1, 4, 8):
        ratios = {k: [1.0, 1.0] for k in range(1, candidates + 1)}
        study = compare(ratios, CONCURRENCIES, WEIGHTS, worlds=worlds, seed=11)
        faster = Share(sum(p is not None for p in study.pruned), worlds)
        out.append(f"- {candidates} candidate(s) equal to off: any speculation recommended in {faster}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", type=int, default=2000)
    parser.add_argument("--record", type=Path, default=None, help="also write the section to this file")
    args = parser.parse_args()
    text = "<!-- figures:pruning -->\n" + "\n".join(pruning_section(args.worlds)) + "\n<!-- /figures -->\n"
    text += "\n<!-- figures:screen -->\n" + "\n".join(screen_section(100 * args.worlds)) + "\n<!-- /figures -->\n"
    text += "\n<!-- figures:pruning_family -->\n" + "\n".join(family_lines(args.worlds)) + "\n<!-- /figures -->\n"
    print(text)
    if args.record is not None:
        args.record.parent.mkdir(parents=True, exist_ok=True)
        args.record.write_text(f"<!-- python bench/bench_pruning.py --worlds {args.worlds} -->\n\n" + text)
    for max_k in (1, 2, 3, 4):
        sweep = pruning.sweep_servers([max_k, max_k])
        print(f"--max-k {max_k}, --max-servers {sweep + 1}: tune says: {pruning.budget_line(sweep + 1, 2, 1, ROUNDS)}")


if __name__ == "__main__":
    main()
