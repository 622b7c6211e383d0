"""Repeated rounds and servers: the median round of all of a configuration's servers is kept whole, the
passes alternate, and the spread of the rounds is reported."""

from __future__ import annotations

import pytest

from nim_specdec_lab.replay.spec import ReplayMeasurement
from nim_specdec_lab.tune.repeats import later_passes, median_run, spread, spreads_by_configuration
from nim_specdec_lab.tune.report import OFF, ConfigRow, build_result, render_markdown
from nim_specdec_lab.tune.runner import Round, ServerLog, keep, server_name


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
    "case_id,servers,expected",
    [
        ("one-server-no-more-passes", 1, []),
        ("two-servers-alternate", 2, [(2, "off"), (2, "draft-k4"), (2, "draft-k0")]),
        (
            "three-servers",
            3,
            [(2, "off"), (2, "draft-k4"), (2, "draft-k0"), (3, "off"), (3, "draft-k4"), (3, "draft-k0")],
        ),
    ],
)
def test_later_passes_repeat_the_first_in_order(case_id, servers, expected):
    assert later_passes(["off", "draft-k4", "draft-k0"], servers) == expected


@pytest.mark.parametrize(
    "configuration,server_no,expected",
    [
        ("off", 1, "off"),
        ("off", 2, "off-s2"),
        ("draft_model-k4", 3, "draft_model-k4-s3"),
    ],
)
def test_server_names(configuration, server_no, expected):
    assert server_name(configuration, server_no) == expected


def _run(concurrency: int, latency_s: float) -> ReplayMeasurement:
    """A closed-loop run of 8 requests of 100 tokens whose server-side figure is concurrency x 100 / latency."""
    return ReplayMeasurement(
        8, 8, concurrency, "closed", 10.0, 800, 80.0, {}, {}, {}, None, None, server_means={"latency_mean_s": latency_s}
    )


def test_keep_takes_the_median_over_every_server_and_logs_each_round():
    # Server 1 was slow in both rounds, server 2 fast: the kept run is the median of all four rounds
    # (the lower middle one), not either server's own median.
    slow1, slow2, fast1, fast2 = _run(1, 2.0), _run(1, 1.6), _run(1, 1.0), _run(1, 0.8)  # 50, 62.5, 100, 125
    rounds = {1: [Round("off", 1, slow1), Round("off", 2, slow2), Round("off-s2", 1, fast1), Round("off-s2", 2, fast2)]}
    log = ServerLog()
    kept = keep(log, "off", rounds)
    assert kept == {1: slow2}
    assert [(r["configuration"], r["server"], r["round"], r["kept"], r["judged_tokens_per_s"]) for r in log.rounds] == [
        ("off", "off", 1, False, 50.0),
        ("off", "off", 2, True, 62.5),
        ("off", "off-s2", 1, False, 100.0),
        ("off", "off-s2", 2, False, 125.0),
    ]


def _result(repeat: int, servers: int = 1) -> dict:
    rows = [ConfigRow("off", OFF, None, {1: 45.0, 4: 150.0}, {1: 40.0, 4: 150.0})]
    return build_result(
        recommended_env={"NIM_SPECDEC_ENABLE": "0"},
        chosen=None,
        rows=rows,
        concurrencies=[1, 4],
        cost_model={"formula": "f", "base_s": 0.01, "per_seq_s": 0.001, "methods": {}},
        acceptance={},
        methods=[],
        servers=[{"name": "off"}],
        runs=RUNS,
        notes=[],
        duration_s=1.0,
        repeat=repeat,
        servers_per_configuration=servers,
    )


def test_markdown_shows_the_spread_only_when_rounds_were_repeated():
    repeated = render_markdown(_result(2))
    assert "## Spread over 2 rounds" in repeated
    assert "| off | 1.25 | 1.00 |" in repeated and "| draft_model-k4 | 1.50 |  |" in repeated
    assert _result(2)["repeat"] == 2
    assert "Spread over" not in render_markdown(_result(1))


def test_markdown_counts_rounds_on_every_server():
    assert "## Spread over 1 round on each of 2 servers" in render_markdown(_result(1, servers=2))
    assert "## Spread over 2 rounds on each of 3 servers" in render_markdown(_result(2, servers=3))
    assert _result(2, servers=3)["servers_per_configuration"] == 3
