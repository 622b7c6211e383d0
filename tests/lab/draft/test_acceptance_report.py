"""acceptance.json from bench's report: each configuration's figures with their intervals, and the verdict
of whether the trained draft's acceptance length lies above both others'."""

from __future__ import annotations

import pytest

from nim_specdec_lab.draft.acceptance_report import acceptance, markdown
from nim_specdec_lab.draft.measure import bench_sides


def cell(value, low, high):
    # Overall's interval is not kept in range: the held-out category's own cell is the figure
    return {
        "held-out": {"value": value, "interval": [low, high], "units": 12},
        "Overall": {"value": value, "interval": [low - 9, high], "units": 12},
    }


def bench_report(lengths: dict) -> dict:
    sides = bench_sides()
    return {
        "acceptance_matrix": {
            "method": "delta method",
            "acceptance_length": {sides[n]: cell(*v) for n, v in lengths.items()},
            "acceptance_rate": {sides[n]: cell((v[0] - 1) / 3, 0.1, 0.9) for n, v in lengths.items()},
        },
        "rows": [
            {"candidate": sides["trained"], "speedup": 1.21, "speedup_interval": [1.1, 1.3], "verdict": "faster"},
            {"candidate": sides["ngram"], "speedup": 0.97, "speedup_interval": [0.9, 1.05], "verdict": "no difference"},
        ],
        "warnings": ["a note"],
    }


FACTS = {"held_out_requests": 12, "rounds": 2, "num_speculative_tokens": 3, "library": "speculators 0.9.0"}


@pytest.mark.parametrize(
    "lengths, wins",
    [
        ({"trained": (2.4, 2.2, 2.6), "untrained": (1.1, 1.0, 1.2), "ngram": (1.3, 1.2, 1.5)}, True),
        ({"trained": (2.4, 1.4, 3.0), "untrained": (1.1, 1.0, 1.2), "ngram": (1.3, 1.2, 1.5)}, False),  # overlaps
        ({"trained": (1.0, 1.0, 1.0), "untrained": (1.1, 1.0, 1.2), "ngram": (1.3, 1.2, 1.5)}, False),
    ],
)
def test_wins_only_when_the_intervals_do_not_overlap(lengths, wins):
    report = acceptance(bench_report(lengths), bench_sides(), FACTS)
    assert report["trained_wins"] is wins
    trained = report["configurations"]["trained"]
    assert trained["acceptance_length"]["value"] == lengths["trained"][0]
    assert trained["speedup"] == {"value": 1.21, "interval": [1.1, 1.3], "verdict": "faster", "concurrency": None}
    assert report["configurations"]["untrained"]["speedup"] is None


def test_markdown_shows_every_figure_with_its_interval():
    lengths = {"trained": (2.4, 2.2, 2.6), "untrained": (1.1, 1.0, 1.2), "ngram": (1.3, 1.2, 1.5)}
    text = markdown(acceptance(bench_report(lengths), bench_sides(), FACTS))
    assert "| trained | 2.40 [2.20, 2.60] |" in text and "| 1.21 [1.10, 1.30] | faster |" in text
    assert "| ngram | 1.30 [1.20, 1.50] |" in text and "above both" in text and "- note: a note" in text


def test_no_matrix_gives_no_figures_and_no_win():
    report = acceptance({"rows": []}, bench_sides(), FACTS)
    assert report["trained_wins"] is False
    assert report["configurations"]["trained"]["acceptance_length"] is None
    assert "| trained | n/a |" in markdown(report)
