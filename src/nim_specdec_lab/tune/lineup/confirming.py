"""tune's rounds after the first: off and the contenders, within the server budget, dropping on intervals.

The rules are tune.lineup.pruning's (pure); this module runs them round by round over the servers tune starts,
through the `serve` callback, and says what it left out and why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from nim_specdec_lab.tune.lineup import pruning
from nim_specdec_lab.tune.runs.rounds import Table, order_of


@dataclass(frozen=True)
class Budget:
    servers: int  # servers a tune may start in all
    rounds: int  # --rounds
    margin: float


def confirm(
    table: Table,
    contenders: Sequence[str],
    weights: Mapping[int, float],
    proposal: str | None,
    budget: Budget,
    started: Callable[[], int],
    serve: Callable[[str, int], None],
    note: Callable[[str], None],
) -> set[str]:
    """Rounds 2 to `budget.rounds`: each serves off and the contenders it has room for (`started()`: the servers
    started so far); the names dropped on their intervals are returned."""
    dropped: set[str] = set()
    left = list(contenders)
    for round_no in range(2, budget.rounds + 1):
        serving = pruning.confirmed(
            table.figures("off"),
            {n: table.figures(n) for n in left},
            weights,
            proposal,
            budget.servers - started(),
            budget.rounds - round_no + 1,
        )
        if left and not serving:
            note(f"no round {round_no}: the budget of {budget.servers} servers is spent (--max-servers)")
        for name in left:
            if serving and name not in serving:
                note(f"{name} not served from round {round_no} on: no room in {budget.servers} servers")
        if not serving:
            break
        for name in order_of(["off", *serving], round_no):
            serve(name, round_no)
        gone = pruning.to_drop(
            table.figures("off"), {n: table.figures(n) for n in serving}, weights, proposal, budget.margin
        )
        for name, why in gone.items():
            dropped.add(name)
            note(f"{name} dropped after round {round_no}: {why}")
        left = [n for n in serving if n not in gone]
    return dropped
