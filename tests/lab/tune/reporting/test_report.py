"""tune.json's verification (out of sample only) and tune.md, from plain values."""

from __future__ import annotations

import math

import pytest

from nim_specdec_lab.tune.deciding.decide import Option, decide
from nim_specdec_lab.tune.deciding.verification import held_out, verification_rows
from nim_specdec_lab.tune.reporting.report import CHOICE_KIND, OFF, STATIC, ConfigRow, build_result
from nim_specdec_lab.tune.reporting.report_md import render_markdown

NGRAM = {"method": "ngram", "num_speculative_tokens": 3}
OFF_FIGURES = {1: {1: 100.0, 2: 90.0, 3: 110.0}, 8: {1: 400.0, 2: 360.0, 3: 440.0}}
NGRAM_FIGURES = {1: {1: 150.0, 2: 137.0, 3: 163.0}, 8: {1: 480.0, 2: 440.0, 3: 520.0}}


def test_held_out_error_is_predicted_over_measured_with_its_interval():
    # Each round's fit without the concurrency predicted 10%, 20% and 30% above that round's measurement.
    measured = {1: {1: 100.0, 2: 100.0, 3: 100.0}, 8: {1: 400.0}}
    predicted = {(1, 1): 110.0, (2, 1): 120.0, (3, 1): 130.0, (1, 8): None}
    got = held_out("ngram-k3", measured, lambda r, c: predicted[(r, c)], 0.03)
    one = got[1].to_json()
    geo = math.exp(sum(math.log(x) for x in (1.1, 1.2, 1.3)) / 3)
    assert one["error"] == pytest.approx(geo - 1, abs=1e-4) and one["rounds"] == 3
    low, high = one["error_interval"]
    assert low < one["error"] < high and one["predicted"] == {"1": 110.0, "2": 120.0, "3": 130.0}
    # Nothing left to fit on at 8 (here: the predictor had no answer): no error, not a made-up one.
    assert got[8].to_json()["error"] is None and got[8].to_json()["rounds"] == 0


def test_the_held_out_predictor_is_asked_for_each_round_and_concurrency():
    asked = []
    held_out("off", OFF_FIGURES, lambda r, c: asked.append((r, c)) or 1.0, 0.03)
    assert sorted(asked) == [(r, c) for r in (1, 2, 3) for c in (1, 8)]


def _decision():
    option = Option("ngram-k3", NGRAM, NGRAM_FIGURES, proposal=True)
    return decide(OFF_FIGURES, [option], {1: 0.5, 8: 0.5}, 0.03)


def test_verification_rows_show_the_recommendation_against_off_at_every_concurrency():
    decision = _decision()
    assert decision.recommended is not None and decision.recommended.name == "ngram-k3"
    held = held_out("ngram-k3", NGRAM_FIGURES, lambda r, c: NGRAM_FIGURES[c][r] * 1.05, 0.03)
    rows = verification_rows(decision, held, [1, 8])
    assert [r["concurrency"] for r in rows] == [1, 8]
    assert rows[0]["recommended"] == "ngram-k3" and rows[0]["recommended_vs_off"]["speedup_interval"] is not None
    assert rows[0]["held_out"]["error"] == pytest.approx(0.05, abs=1e-4)
    off = decide(OFF_FIGURES, [], {1: 1.0}, 0.03)
    assert verification_rows(off, {}, [1])[0] == {
        "concurrency": 1,
        "recommended": "off",
        "recommended_vs_off": None,
        "held_out": None,
    }


def _result() -> dict:
    decision = _decision()
    compared = decision.comparison("ngram-k3")
    held = held_out("ngram-k3", NGRAM_FIGURES, lambda r, c: NGRAM_FIGURES[c][r] * 0.9, 0.03)
    rows = [
        ConfigRow("off", OFF, None, {1: 95.0, 8: 410.0}, {1: 100.0, 8: 400.0}),
        ConfigRow(
            "ngram-k3",
            STATIC,
            NGRAM,
            {1: 140.0, 8: 470.0},
            {1: 150.0, 8: 480.0},
            {c: s.to_json() for c, s in compared.by_c.items()},
            compared.traffic.to_json(),
            recommended=True,
        ),
        ConfigRow("model-choice", CHOICE_KIND, {**NGRAM, "x": 1}, {1: 141.0, 8: 300.0}),
    ]
    return build_result(
        recommended_env={"NIM_SPECDEC_ENABLE": "1", "NIM_SPECDEC_ARGS": '{"speculative_config": {"method": "ngram"}}'},
        chosen={"method": "ngram", "schedule": [{"batch_sizes": "1+", "k": 3}]},
        decision={"line": decision.line, "recommended_interval": decision.picked_json()},
        rows=rows,
        concurrencies=[1, 8],
        verification=verification_rows(decision, held, [1, 8]),
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
        servers=[{"name": "off"}, {"name": "ngram-k3"}] * 3,
        lineup=["off", "ngram-k3"],
        runs=[],
        notes=["a note"],
        duration_s=321.0,
        rounds=3,
    )


def test_markdown_holds_the_variables_the_intervals_and_the_held_out_check():
    text = render_markdown(_result())
    assert "NIM_SPECDEC_ENABLE=1\n" in text and "NIM_SPECDEC_ARGS={" in text
    assert "tune: recommending ngram-k3" in text
    # Every concurrency against off, with its interval and verdict, and the recommended row marked.
    row = next(line for line in text.splitlines() if line.startswith("| ngram-k3 (recommended) |"))
    assert row.count("[") == 3 and row.count("faster") == 3, row
    assert "| model-choice | - | - | - |" in text  # never measured: no ratio made up
    assert "| ngram-k3 | 150.0 / 140.0 | 480.0 / 470.0 |" in text
    assert "| model-choice | - / 141.0 | - / 300.0 |" in text
    # The verification shows only the held-out error: -10% here, with its interval.
    verification = text[text.index("## Verification (out of sample)") :]
    assert "| 1 | 1." in verification and "| -10.0% [" in verification
    assert "6 server starts in 3 round(s) (each round: off, ngram-k3); tune took 321 s." in text
    assert "- a note" in text
    # The recommendation's interval as picked among the candidates, below the table of own intervals.
    picked = _decision().picked_json()
    low, high = picked["interval"]
    assert f"95% interval [{low:.3f}, {high:.3f}] as picked among 1 candidate(s)" in text
    assert "| this traffic (own interval) |" in text


def test_markdown_of_off_says_so():
    result = _result()
    result["recommendation"] = None
    result["verification"] = [{"concurrency": 1, "recommended": "off", "recommended_vs_off": None, "held_out": None}]
    text = render_markdown(result)
    assert "Speculation off." in text and "| 1 | 1 (speculation off) | - (nothing left to fit on) |" in text


def test_markdown_shows_the_expected_live_acceptance():
    from nim_specdec_lab.tune.reporting.expected_acceptance import expected_acceptance  # noqa: PLC0415

    result = _result()
    assert "Expected live acceptance" not in render_markdown(result)  # no spec counters in these runs
    result["runs"] = [
        {"configuration": "ngram-k3", "spec": {"drafts": 100, "accepted": accepted}} for accepted in (120, 130, 110)
    ]
    result["expected_acceptance"] = expected_acceptance(result)
    text = render_markdown(result)
    row = next(line for line in text.splitlines() if line.startswith("| ngram-k3 | ngram | 3 | 3 | 2.200 |"))
    low, high = result["expected_acceptance"]["by_configuration"][0]["acceptance_length_interval"]
    assert row.endswith(f"| {low:.3f} to {high:.3f} |") and low < 2.2 < high


def test_plots_include_the_speedups_with_their_intervals(tmp_path):
    from nim_specdec_lab.tune.reporting.plots import write_plots  # noqa: PLC0415

    result = _result()
    result["methods"] = [{"method": "ngram", "score": 1.4, "k_by_batch_size": [3] * 8}]
    paths = write_plots(result, tmp_path)
    assert [p.name for p in paths] == ["tokens_per_s.png", "speedup_vs_off.png", "k_per_batch_size.png"]
    assert all(p.stat().st_size > 1000 for p in paths)
