"""tune.json's verification and tune.md from plain rows."""

from __future__ import annotations

import pytest

from nim_specdec_lab.tune.report import (
    NOT_KEPT,
    OFF,
    RECOMMENDED,
    STATIC,
    ConfigRow,
    build_result,
    render_markdown,
    verification,
)

ROWS = [
    ConfigRow("off", OFF, None, {1: 100.0, 8: 400.0}, {1: 100.0, 8: 400.0}),
    ConfigRow("ngram K=3", STATIC, {"method": "ngram"}, {1: 130.0, 8: 380.0}, {1: 131.0, 8: 390.0}),
    ConfigRow("ngram K=1", STATIC, {"method": "ngram"}, {1: 115.0, 8: 405.0}),  # predicted only
    ConfigRow("recommended", RECOMMENDED, {"method": "ngram"}, {1: 130.0, 8: 400.0}, {1: 125.0, 8: 410.0}),
]


@pytest.mark.parametrize(
    "concurrency,best,ratio,error",
    [
        (1, "ngram K=3", 125.0 / 131.0, (130.0 - 125.0) / 125.0),
        (8, "off", 410.0 / 400.0, (400.0 - 410.0) / 410.0),
    ],
)
def test_verification_compares_with_the_best_measured_alternative(concurrency, best, ratio, error):
    row = {v["concurrency"]: v for v in verification(ROWS, [1, 8])}[concurrency]
    assert row["best_alternative"] == best
    assert row["ratio_to_best"] == pytest.approx(ratio)
    assert row["prediction_error"] == pytest.approx(error)


def test_markdown_holds_the_variables_and_every_table():
    result = build_result(
        recommended_env={"NIM_SPECDEC_ENABLE": "1", "NIM_SPECDEC_ARGS": '{"speculative_config": {"method": "ngram"}}'},
        chosen={"method": "ngram", "schedule": [{"batch_sizes": "1-4", "k": 3}, {"batch_sizes": "5+", "k": 0}]},
        rows=ROWS,
        concurrencies=[1, 8],
        cost_model={
            "formula": "f",
            "base_s": 0.01,
            "per_seq_s": 0.001,
            "methods": {"ngram": {"per_k_s": 0.0, "per_draft_token_s": 0.002}},
        },
        acceptance={
            "ngram": {"source": "simulator", "by_k": [{"k": 0, "tokens_per_slot": 1.0, "draft_tokens_per_slot": 0.0}]}
        },
        methods=[],
        servers=[{"name": "off"}, {"name": "ngram-k3"}, {"name": "recommended"}],
        runs=[],
        notes=["a note"],
        duration_s=321.0,
    )
    text = render_markdown(result)
    assert "NIM_SPECDEC_ENABLE=1\n" in text and "NIM_SPECDEC_ARGS={" in text
    assert "1-4: K=3, 5+: K=0" in text
    assert "| ngram K=1 | - / 115.0 | - / 405.0 |" in text
    assert "| 8 | 410.0 | off 400.0 | 1.025 | -2.4% |" in text
    assert "3 server starts; tune took 321 s." in text and "- a note" in text
    assert result["configurations"][0]["measured_tokens_per_s"] == {"1": 100.0, "8": 400.0}


def _rows(rec: dict, ngram: dict) -> list[ConfigRow]:
    return [
        ConfigRow("off", OFF, None, {}, {1: 100.0, 8: 400.0}),
        ConfigRow("ngram K=3", STATIC, {"method": "ngram"}, {}, ngram),
        ConfigRow("recommended", RECOMMENDED, {"method": "ngram"}, {}, rec),
    ]


@pytest.mark.parametrize(
    "case_id,rec,ngram,kept",
    [
        ("schedule-verified", {1: 128.0, 8: 395.0}, {1: 130.0, 8: 300.0}, "recommended"),
        ("schedule-loses-at-8", {1: 128.0, 8: 250.0}, {1: 130.0, 8: 380.0}, "ngram K=3"),
        ("everything-loses-to-off", {1: 90.0, 8: 300.0}, {1: 95.0, 8: 200.0}, "off"),
        ("tie-keeps-the-recommendation", {1: 100.0, 8: 400.0}, {1: 50.0, 8: 100.0}, "recommended"),
    ],
)
def test_measurements_have_the_last_word(case_id, rec, ngram, kept):
    from nim_specdec_lab.tune.report import keep_or_fall_back  # noqa: PLC0415

    assert keep_or_fall_back(_rows(rec, ngram), [1, 8]).name == kept


def test_after_a_fall_back_the_prediction_error_is_the_model_choices():
    # Verification kept the measured off row; the model's choice was predicted 150 and measured 100 at c=1.
    rows = [
        ConfigRow("off", OFF, None, {1: 100.0}, {1: 120.0}),
        ConfigRow(NOT_KEPT, STATIC, {"method": "ngram"}, {1: 150.0}, {1: 100.0}),
        ConfigRow("recommended", RECOMMENDED, None, {1: 100.0}, {1: 120.0}),
    ]
    (row,) = verification(rows, [1])
    assert row["prediction_of"] == NOT_KEPT and row["prediction_error"] == pytest.approx(0.5)
    assert row["ratio_to_best"] == pytest.approx(1.0)
