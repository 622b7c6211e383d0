"""Rounds and repeats: every run kept in the order measured, each server's median run standing for it in its
round, the median of all of a configuration's runs kept whole, and the spread of the runs reported."""

from __future__ import annotations

import pytest

from nim_specdec_lab.replay.spec import ReplayMeasurement
from nim_specdec_lab.tune.reporting.report import OFF, ConfigRow, build_result
from nim_specdec_lab.tune.reporting.report_md import render_markdown
from nim_specdec_lab.tune.runs.measurement import Round, server_name
from nim_specdec_lab.tune.runs.repeats import median_run, spread, spreads_by_configuration
from nim_specdec_lab.tune.runs.rounds import Table


@pytest.mark.parametrize(
    "case_id,figures,kept",
    [
        ("one-round", [90.0], 0),
        ("odd-takes-the-middle", [136.0, 92.0, 102.0], 2),
        ("even-takes-the-lower-middle", [120.0, 80.0, 100.0, 110.0], 2),
        ("ties-keep-the-middle-round", [100.0, 100.0, 100.0], 1),
        ("order-of-rounds-does-not-matter", [50.0, 200.0, 75.0], 2),
    ],
)
def test_median_round_is_one_whole_round(case_id, figures, kept):
    # Rounds are (figure, counters) pairs: the counters must come from the same round as the figure.
    runs = [(f, {"round": i}) for i, f in enumerate(figures)]
    chosen = median_run(runs, lambda r: r[0])
    assert chosen is runs[kept]


def test_median_of_nothing_is_an_error():
    with pytest.raises(ValueError):
        median_run([], float)


@pytest.mark.parametrize(
    "case_id,figures,expected",
    [
        ("one-round-has-none", [100.0], None),
        ("three-rounds", [92.0, 136.0, 102.0], 136.0 / 92.0),
        ("zero-figure-has-none", [0.0, 10.0], None),
        ("identical", [5.0, 5.0], 1.0),
    ],
)
def test_spread_is_largest_over_smallest(case_id, figures, expected):
    found = spread(figures, float)
    assert found == (None if expected is None else pytest.approx(expected))


RUNS = [
    {"configuration": "off", "concurrency": 1, "round": 1, "judged_tokens_per_s": 40.0},
    {"configuration": "off", "concurrency": 1, "round": 2, "judged_tokens_per_s": 50.0},
    {"configuration": "off", "concurrency": 4, "round": 1, "judged_tokens_per_s": 150.0},
    {"configuration": "off", "concurrency": 4, "round": 2, "judged_tokens_per_s": 150.0},
    {"configuration": "draft_model-k4", "concurrency": 1, "round": 1, "judged_tokens_per_s": 60.0},
    {"configuration": "draft_model-k4", "concurrency": 1, "round": 2, "judged_tokens_per_s": 90.0},
    {"configuration": "draft_model-k4", "concurrency": 4, "round": 1, "judged_tokens_per_s": None},  # no figure
]


def test_spreads_group_rounds_by_server_and_concurrency():
    assert spreads_by_configuration(RUNS) == {"off": {1: 1.25, 4: 1.0}, "draft_model-k4": {1: 1.5}}


@pytest.mark.parametrize(
    "configuration,round_no,expected",
    [
        ("off", 1, "off"),
        ("off", 2, "off-r2"),
        ("draft_model-k4", 3, "draft_model-k4-r3"),
    ],
)
def test_server_names(configuration, round_no, expected):
    assert server_name(configuration, round_no) == expected


def _run(concurrency: int, latency_s: float) -> ReplayMeasurement:
    """A closed-loop run of 8 requests of 100 tokens whose server-side figure is concurrency x 100 / latency."""
    return ReplayMeasurement(
        8, 8, concurrency, "closed", 10.0, 800, 80.0, {}, {}, {}, None, None, server_means={"latency_mean_s": latency_s}
    )


def _measured(name: str, *latencies_by_repeat: tuple[float, ...]) -> dict[int, list[Round]]:
    """What servers.measure returns for one server: concurrency -> its runs, one per repeat."""
    out: dict[int, list[Round]] = {}
    for repeat, latencies in enumerate(latencies_by_repeat, start=1):
        for c, latency in zip((1, 4), latencies):
            out.setdefault(c, []).append(Round(name, repeat, _run(c, latency)))
    return out


def test_table_keeps_the_measuring_order_and_each_servers_median():
    table = Table()
    # Round 1: off's server, then ngram's, each measuring c=1 and c=4 twice (repeats outermost).
    table.add("off", 1, _measured("off", (2.0, 4.0), (1.6, 4.0)))  # c=1: 50, 62.5; c=4: 100, 100
    table.add("ngram-k3", 1, _measured("ngram-k3", (1.0, 2.0), (1.0, 2.0)))
    table.add("off", 2, _measured("off-r2", (1.0, 2.0), (0.8, 2.0)))  # c=1: 100, 125
    order = [(r["configuration"], r["round"], r["server"], r["repeat"], r["concurrency"]) for r in table.to_json()]
    assert order == [
        ("off", 1, "off", 1, 1),
        ("off", 1, "off", 1, 4),
        ("off", 1, "off", 2, 1),
        ("off", 1, "off", 2, 4),
        ("ngram-k3", 1, "ngram-k3", 1, 1),
        ("ngram-k3", 1, "ngram-k3", 1, 4),
        ("ngram-k3", 1, "ngram-k3", 2, 1),
        ("ngram-k3", 1, "ngram-k3", 2, 4),
        ("off", 2, "off-r2", 1, 1),
        ("off", 2, "off-r2", 1, 4),
        ("off", 2, "off-r2", 2, 1),
        ("off", 2, "off-r2", 2, 4),
    ]
    # Each server's figure in its round is its median run (the lower middle of two); the configuration's kept
    # run is the median of all its runs over every server: 50, 62.5, 100, 125 -> 62.5.
    assert table.figures("off") == {1: {1: 50.0, 2: 100.0}, 4: {1: 100.0, 2: 200.0}}
    assert [r["judged_tokens_per_s"] for r in table.to_json() if r["kept"] and r["concurrency"] == 1] == [62.5, 100.0]
    assert table.rounds_of("off") == 2 and table.rounds_of("ngram-k3") == 1 and not table.has("suffix-k3")


def _result(repeat: int, rounds: int = 1) -> dict:
    rows = [ConfigRow("off", OFF, None, {1: 45.0, 4: 150.0}, {1: 40.0, 4: 150.0})]
    return build_result(
        recommended_env={"NIM_SPECDEC_ENABLE": "0"},
        chosen=None,
        decision={"line": "tune: no candidate to compare with off; speculation off"},
        rows=rows,
        concurrencies=[1, 4],
        verification=[],
        cost_model={"formula": "f", "base_s": 0.01, "per_seq_s": 0.001, "methods": {}},
        acceptance={},
        methods=[],
        servers=[{"name": "off"}],
        lineup=["off"],
        runs=RUNS,
        notes=[],
        duration_s=1.0,
        repeat=repeat,
        rounds=rounds,
    )


def test_markdown_shows_the_spread_only_when_there_is_more_than_one_run():
    repeated = render_markdown(_result(2))
    assert "## Spread of the runs" in repeated
    assert "| off | 1.25 | 1.00 |" in repeated and "| draft_model-k4 | 1.50 |  |" in repeated
    assert "## Spread of the runs" in render_markdown(_result(1, rounds=3))
    assert "Spread of the runs" not in render_markdown(_result(1))
    assert _result(2, rounds=3)["rounds"] == 3 and _result(2, rounds=3)["repeat"] == 2
