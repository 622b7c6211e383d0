"""What pruning costs tune's answer: the pruned tune against the full sweep in the same simulated worlds,
printed as the table docs/tuning.md quotes.

    python bench/bench_pruning.py [--worlds 2000] [--record bench/recorded/bench_pruning.md]

One section, `pruning` (between `<!-- figures:pruning -->` and `<!-- /figures -->`; tests/contract/test_docs_figures.py
fails where the doc and the recorded output disagree): for each world, the share of worlds in which the
pruned tune (tune.pruning: the first-round screen, drops on intervals, a server budget) recommends what the
full sweep (every configuration in every round) does, with its 95% Wilson interval; the servers the pruned
tune started (median and most) against the full sweep's; and the share of worlds in which a useless draft
was served once. The machine is the noise studies' (nim_specdec_lab.noise_worlds.Machine), 3 rounds,
concurrencies 1 and 4 weighed alike. Then, outside the section, the pruned tune's A/A worlds with 1, 4 and 8
candidates equal to off: the share that recommends any speculation (family-wise).
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from nim_specdec_lab.tune.noise_study import Share
from nim_specdec_lab.tune.pruning_study import compare

CONCURRENCIES = (1, 4)
WEIGHTS = {1: 0.5, 4: 0.5}
DEMO = {1: [0.3, 0.3], 2: [1.3, 1.25], 3: [1.35, 1.3]}  # useless draft, n-gram at K = 4, the model's schedule
WORLDS = (
    ("demo shape, --max-k 4 (budget 10)", DEMO, 3, 10),
    ("demo shape, --max-k 3 (budget 8: the leader only)", DEMO, 3, 8),
    ("useless draft, n-gram 1.1x, schedule 1.12x (budget 10)", {1: [0.3, 0.3], 2: [1.1, 1.1], 3: [1.12, 1.12]}, 3, 10),
    ("useless draft, n-gram 0.8x, model chose off (budget 10)", {1: [0.3, 0.3], 2: [0.8, 0.8]}, None, 10),
    ("draft 0.65x, n-gram 1.3x (budget 10)", {1: [0.65, 0.65], 2: [1.3, 1.3]}, 2, 10),
)


def pruning_section(worlds: int) -> list[str]:
    lines = [
        "| world | same as the full sweep | servers, pruned (median, most) | servers, full sweep "
        "| useless draft served once |",
        "|---|---|---|---|---|",
    ]
    for label, ratios, proposal, budget in WORLDS:
        study = compare(ratios, CONCURRENCIES, WEIGHTS, proposal=proposal, budget=budget, worlds=worlds, seed=3)
        once = Share(sum(served["1"] == 1 for served in study.rounds_served), worlds)
        lines.append(
            f"| {label} | {study.agreement()} | {statistics.median(study.servers):.0f}, {max(study.servers)} "
            f"| {study.full_servers} | {once.rate:.1%} |"
        )
    return lines


def family_lines(worlds: int) -> list[str]:
    out = []
    for candidates in (1, 4, 8):
        ratios = {k: [1.0, 1.0] for k in range(1, candidates + 1)}
        study = compare(ratios, CONCURRENCIES, WEIGHTS, worlds=worlds, seed=11)
        faster = Share(sum(p is not None for p in study.pruned), worlds)
        out.append(f"A/A, {candidates} candidate(s), pruned tune: any speculation recommended in {faster}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", type=int, default=2000)
    parser.add_argument("--record", type=Path, default=None, help="also write the section to this file")
    args = parser.parse_args()
    text = "<!-- figures:pruning -->\n" + "\n".join(pruning_section(args.worlds)) + "\n<!-- /figures -->\n"
    print(text)
    if args.record is not None:
        args.record.parent.mkdir(parents=True, exist_ok=True)
        args.record.write_text(f"<!-- python bench/bench_pruning.py --worlds {args.worlds} -->\n\n" + text)
    for line in family_lines(args.worlds):
        print(line)


if __name__ == "__main__":
    main()
