"""What a position effect can do to tune's speedups in its order of servers, printed as the table
docs/tuning.md quotes.

    python bench/bench_order.py [--record bench/recorded/bench_order.md]

One section, `order` (between `<!-- figures:order -->` and `<!-- /figures -->`; the doc holds the same block and
tests/contract/test_docs_figures.py fails where they disagree): for each lineup size, the largest shift a
first-server effect p (in log) gives a candidate's mean log ratio over off's in R rounds of tune's order
(tune.runs.rounds.position_bias), in units of p / R, over R = 2 to 12; then that shift for a 4% effect at 3 and at 8
rounds, and for a drift of 1% per place within a round at 3 rounds. Exact (no simulation): the same figures
on every run.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from nim_specdec_lab.tune.runs.rounds import position_bias

SIZES = range(2, 10)
ROUNDS = range(2, 13)


def order_section() -> list[str]:
    lines = [
        "| lineup size | largest shift, R = 2 to 12, in p / R | p = 4%, 3 rounds | p = 4%, 8 rounds "
        "| drift 1% per place, 3 rounds |",
        "|---|---|---|---|---|",
    ]
    for size in SIZES:
        worst = max(abs(position_bias(size, r, [-0.04])) * r / 0.04 for r in ROUNDS)
        drift = [-0.01 * p for p in range(size)]
        lines.append(
            f"| {size} | {worst:.2f} | {position_bias(size, 3, [-0.04]):+.4f} | {position_bias(size, 8, [-0.04]):+.4f} "
            f"| {position_bias(size, 3, drift):+.4f} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", type=int, default=0, help="unused: the figures are exact")
    parser.add_argument("--record", type=Path, default=None, help="also write the section to this file")
    args = parser.parse_args()
    text = "<!-- figures:order -->\n" + "\n".join(order_section()) + "\n<!-- /figures -->\n"
    print(text)
    if args.record is not None:
        args.record.parent.mkdir(parents=True, exist_ok=True)
        args.record.write_text("<!-- python bench/bench_order.py -->\n\n" + text)


if __name__ == "__main__":
    main()
