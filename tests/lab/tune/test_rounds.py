"""tune's order of servers: round 1 as the lineup was built (rotation 0), round n rotated by n - 1 places,
off first again never, each server's position recorded with its runs."""

from __future__ import annotations

from nim_specdec_lab.replay.spec import ReplayMeasurement
from nim_specdec_lab.tune.rounds import Table, order_of
from nim_specdec_lab.tune.runner import Round


def test_rounds_rotate_into_a_latin_square():
    lineup = ["off", "ngram-k3", "model-choice"]
    orders = [order_of(lineup, n) for n in (1, 2, 3, 4, 5)]
    assert orders[0] == lineup
    assert orders[1] == ["ngram-k3", "model-choice", "off"] and orders[2] == ["model-choice", "off", "ngram-k3"]
    # Over three rounds every configuration holds every position once; off is not always first.
    for position in range(3):
        assert sorted(o[position] for o in orders[:3]) == sorted(lineup)
    # Past the lineup's length the rotations by 1 and 2 places again, never off first.
    assert orders[3] == orders[1] and orders[4] == orders[2]


def test_off_starts_round_1_only():
    # Two configurations in three rounds cannot share the first place evenly: the candidate takes it twice
    # (a cold first server weighs against speculation), off once (the former order: off in rounds 1 and 3).
    two = [order_of(["off", "ngram-k4"], n) for n in (1, 2, 3, 4, 5)]
    assert [o[0] for o in two] == ["off", "ngram-k4", "ngram-k4", "ngram-k4", "ngram-k4"]
    for size in (2, 3, 5, 9):
        lineup = ["off", *(f"c{i}" for i in range(1, size))]
        assert [n for n in range(1, 20) if order_of(lineup, n)[0] == "off"] == [1]
        assert all(sorted(order_of(lineup, n)) == sorted(lineup) for n in range(1, 20))


def _measured(server: str) -> dict[int, list[Round]]:
    run = ReplayMeasurement(8, 8, 1, "closed", 10.0, 800, 80.0, {}, {}, {}, None, None)
    return {1: [Round(server, 1, run)], 4: [Round(server, 1, run)]}


def test_each_runs_position_is_its_servers_place_in_its_round():
    table = Table()
    for name in ("off", "ngram-k3", "draft_model-k0", "model-choice"):
        table.add(name, 1, _measured(name))
    for name in order_of(["off", "ngram-k3", "model-choice"], 2):
        table.add(name, 2, _measured(f"{name}-r2"))
    positions = {(r["configuration"], r["round"]): r["position"] for r in table.to_json()}
    assert positions == {
        ("off", 1): 1,
        ("ngram-k3", 1): 2,
        ("draft_model-k0", 1): 3,
        ("model-choice", 1): 4,
        ("ngram-k3", 2): 1,
        ("model-choice", 2): 2,
        ("off", 2): 3,
    }
    assert table.order_by_round() == {
        "1": ["off", "ngram-k3", "draft_model-k0", "model-choice"],
        "2": ["ngram-k3", "model-choice", "off"],
    }
