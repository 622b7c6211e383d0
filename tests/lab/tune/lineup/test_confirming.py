"""tune's later rounds (tune.lineup.confirming) over a table of plain figures: what each round serves, in what order,
and what it says where the budget or an interval leaves a contender out."""

from __future__ import annotations

from nim_specdec_lab.tune.lineup.confirming import Budget, confirm
from nim_specdec_lab.tune.runs.rounds import order_of

EVEN = {1: 0.5, 4: 0.5}
# The true figure of each configuration at c=1 and c=4, every round alike: "slow" is a loss the interval shows.
TRUE = {"off": (100.0, 400.0), "lead": (130.0, 520.0), "slow": (80.0, 320.0), "other": (128.0, 512.0)}


class Figures:
    """Stands in for tune.runs.rounds.Table: figures(name) is concurrency -> round -> tokens/s."""

    def __init__(self) -> None:
        self.served: dict[str, set[int]] = {name: {1} for name in TRUE}

    def figures(self, name: str) -> dict[int, dict[int, float]]:
        # A little wobble per round, so that an interval has a spread.
        return {
            c: {r: TRUE[name][i] * (1 + 0.01 * (r % 2)) for r in sorted(self.served[name])}
            for i, c in enumerate((1, 4))
        }


def _run(contenders, servers_budget, rounds=3, started_before=4):
    table, order, notes = Figures(), [], []

    def serve(name: str, round_no: int) -> None:
        table.served[name].add(round_no)
        order.append((name, round_no))

    dropped = confirm(
        table,  # type: ignore[arg-type]
        contenders,
        EVEN,
        "lead",
        Budget(servers_budget, rounds, 0.03),
        lambda: started_before + len(order),
        serve,
        notes.append,
    )
    return order, notes, dropped


def test_room_for_every_contender_serves_them_rotated_and_drops_a_loss_on_its_interval():
    order, notes, dropped = _run(["lead", "slow", "other"], servers_budget=12)
    second = [(n, 2) for n in order_of(["off", "lead", "other", "slow"], 2)]
    assert order[:4] == second
    assert dropped == {"slow"} and notes == [
        next(n for n in notes if n.startswith("slow dropped after round 2: measured slower than off"))
    ]
    # Round 3 serves what is left, rotated again.
    assert order[4:] == [(n, 3) for n in order_of(["off", "lead", "other"], 3)]


def test_a_tight_budget_serves_the_leader_only_and_says_so():
    order, notes, _ = _run(["other", "lead"], servers_budget=8)
    assert sorted({n for n, _ in order}) == ["lead", "off"] and len(order) == 4
    assert "other not served from round 2 on: no room in 8 servers" in notes


def test_no_room_for_off_and_one_more_stops_with_a_line():
    order, notes, dropped = _run(["lead"], servers_budget=5)
    assert order == [] and dropped == set()
    assert notes == ["no round 2: the budget of 5 servers is spent (--max-servers)"]
