"""tune's order of servers: round 1 as the lineup was built (rotation 0), then cycles of rotations that share
every place within one round for every lineup size, each server's position recorded with its runs."""

from __future__ import annotations

import pytest

from nim_specdec_lab.replay.spec import ReplayMeasurement
from nim_specdec_lab.tune.runs.measurement import Round
from nim_specdec_lab.tune.runs.rounds import Table, order_of, position_bias


def test_rounds_rotate_into_a_latin_square():
    lineup = ["off", "ngram-k3", "model-choice"]
    orders = [order_of(lineup, n) for n in (1, 2, 3, 4, 5)]
    assert orders[0] == lineup
    assert orders[1] == ["ngram-k3", "model-choice", "off"] and orders[2] == ["model-choice", "off", "ngram-k3"]
    # Over three rounds every configuration holds every position once; off is not always first.
    for position in range(3):
        assert sorted(o[position] for o in orders[:3]) == sorted(lineup)
    # Past the lineup's length the rotations by 1 and 2 places again, then off first (a new cycle).
    assert orders[3] == orders[1] and orders[4] == orders[2]


def test_every_lineup_size_shares_the_first_place_within_one_round():
    # Two configurations: off, n-gram, n-gram, off, n-gram, off, ... (the former rotation put n-gram first in
    # every round after the first: a first-server effect then grew with the rounds).
    two = [order_of(["off", "ngram-k4"], n)[0] for n in range(1, 9)]
    assert two == ["off", "ngram-k4", "ngram-k4", "off", "ngram-k4", "off", "ngram-k4", "off"]
    for size in range(2, 10):
        lineup = ["off", *(f"c{i}" for i in range(1, size))]
        for rounds in range(1, 25):
            orders = [order_of(lineup, n) for n in range(1, rounds + 1)]
            assert orders[0] == lineup and all(sorted(o) == sorted(lineup) for o in orders)
            # Counted here: every configuration's rounds at each place differ by at most one between any two.
            for place in range(size):
                held = [sum(o[place] == name for o in orders) for name in lineup]
                assert max(held) - min(held) <= 1, (size, rounds, place, held)
            if rounds % size == 0:  # whole cycles: a Latin square each
                assert all(sum(o[0] == name for o in orders) == rounds // size for name in lineup)


def test_a_first_server_effect_moves_a_speedup_by_at_most_p_over_r():
    p = -0.04  # the first server 4% slow (in log)
    # Two configurations, 3 rounds: n-gram first twice, off once (counted above): -p/3 against n-gram.
    assert position_bias(2, 3, [p]) == pytest.approx(p / 3)
    assert position_bias(2, 4, [p]) == pytest.approx(0.0)
    # Three configurations, 2 rounds: off first in round 1, c1 in round 2, c2 never: c2 gains |p| / 2.
    assert position_bias(3, 2, [p]) == pytest.approx(-p / 2)
    for size in range(2, 10):
        for rounds in range(2, 25):
            assert abs(position_bias(size, rounds, [p])) <= abs(p) / rounds + 1e-12


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
