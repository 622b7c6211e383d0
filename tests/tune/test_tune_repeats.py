"""Repeated rounds: the median round is kept whole, and the spread of the rounds is reported."""

from __future__ import annotations

import pytest

from nim_specdec.tools.tune.repeats import median_run, spread, spreads_by_configuration
from nim_specdec.tools.tune.report import OFF, ConfigRow, build_result, render_markdown


@pytest.mark.parametrize("case_id,figures,kept", [
    ("one-round", [90.0], 0),
    ("odd-takes-the-middle", [136.0, 92.0, 102.0], 2),
    ("even-takes-the-lower-middle", [120.0, 80.0, 100.0, 110.0], 2),
    ("ties-keep-the-middle-round", [100.0, 100.0, 100.0], 1),
    ("order-of-rounds-does-not-matter", [50.0, 200.0, 75.0], 2),
])
def test_median_round_is_one_whole_round(case_id, figures, kept):
    # Rounds are (figure, counters) pairs: the counters must come from the same round as the figure.
    runs = [(f, {"round": i}) for i, f in enumerate(figures)]
    chosen = median_run(runs, lambda r: r[0])
    assert chosen is runs[kept]


def test_median_of_nothing_is_an_error():
    with pytest.raises(ValueError):
        median_run([], float)


@pytest.mark.parametrize("case_id,figures,expected", [
    ("one-round-has-none", [100.0], None),
    ("three-rounds", [92.0, 136.0, 102.0], 136.0 / 92.0),
    ("zero-figure-has-none", [0.0, 10.0], None),
    ("identical", [5.0, 5.0], 1.0),
])
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


def _result(repeat: int) -> dict:
    rows = [ConfigRow("off", OFF, None, {1: 45.0, 4: 150.0}, {1: 40.0, 4: 150.0})]
    return build_result(recommended_env={"NIM_SPECDEC_ENABLE": "0"}, chosen=None, rows=rows, concurrencies=[1, 4],
                        cost_model={"formula": "f", "base_s": 0.01, "per_seq_s": 0.001, "methods": {}}, acceptance={},
                        methods=[], servers=[{"name": "off"}], runs=RUNS, notes=[], duration_s=1.0, repeat=repeat)


def test_markdown_shows_the_spread_only_when_rounds_were_repeated():
    repeated = render_markdown(_result(2))
    assert "## Spread over 2 rounds" in repeated
    assert "| off | 1.25 | 1.00 |" in repeated and "| draft_model-k4 | 1.50 |  |" in repeated
    assert _result(2)["repeat"] == 2
    assert "Spread over" not in render_markdown(_result(1))
