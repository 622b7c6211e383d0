"""acceptance.json and acceptance.md: the held-out figures of the trained draft, pure from bench's report.

Three configurations replay the held-out requests in the same bench --serve rounds against the same
baseline (speculation off): the trained draft, the same draft untrained, and the built-in model-free method
(n-gram). Acceptance rate and length come from the server's spec-decode counters per response, each with
its 95% interval over prompts (bench.acceptance_interval); the speedup and its verdict are bench's own.
`wins` says whether the trained draft's acceptance length interval lies above both others' intervals.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from nim_specdec_lab.bench.acceptance_matrix import OVERALL

SCHEMA = 1
CONFIGURATIONS = ("trained", "untrained", "ngram")  # in the order bench --serve's candidates are given
METRICS = ("acceptance_length", "acceptance_rate")


def _cell(matrix: Mapping[str, Any] | None, metric: str, side: str) -> dict[str, Any] | None:
    if not matrix:
        return None
    row = (matrix.get(metric) or {}).get(side) or {}
    # One category (the held-out capture): its own cell, whose interval is kept within the metric's range;
    # Overall, a mean over categories, is the figure only when there are several.
    own = [key for key in row if key != OVERALL]
    return row[own[0]] if len(own) == 1 else row.get(OVERALL)


def _speedup(rows: Sequence[Mapping[str, Any]], side: str) -> dict[str, Any] | None:
    for row in rows:
        if row.get("candidate") == side:
            return {
                "value": row.get("speedup"),
                "interval": row.get("speedup_interval"),
                "verdict": row.get("verdict"),
                "concurrency": row.get("concurrency"),
            }
    return None


def _above(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool:
    if not a or not b or not a.get("interval") or not b.get("interval"):
        return False
    return a["interval"][0] > b["interval"][1]


def acceptance(bench_report: Mapping[str, Any], sides: Mapping[str, str], facts: Mapping[str, Any]) -> dict[str, Any]:
    """`sides[name]`: bench's side name of each configuration (candidate1 ...); `facts`: the draft's own
    (k, library, steps, loss, held-out requests, seconds...)."""
    matrix = bench_report.get("acceptance_matrix")
    rows = bench_report.get("rows") or []
    configs = {
        name: {
            **{metric: _cell(matrix, metric, side) for metric in METRICS},
            "speedup": _speedup(rows, side),
        }
        for name, side in sides.items()
    }
    trained = configs.get("trained", {}).get("acceptance_length")
    wins = all(_above(trained, configs[o]["acceptance_length"]) for o in configs if o != "trained")
    return {
        "schema": SCHEMA,
        "draft": dict(facts),
        "configurations": configs,
        "trained_wins": wins,
        "method": (matrix or {}).get("method"),
        "warnings": list(bench_report.get("warnings") or []),
    }


def _figure(cell: Mapping[str, Any] | None, digits: int = 2) -> str:
    if not cell or cell.get("value") is None:
        return "n/a"
    interval = cell.get("interval")
    ends = f" [{interval[0]:.{digits}f}, {interval[1]:.{digits}f}]" if interval else " (no interval)"
    return f"{cell['value']:.{digits}f}{ends}"


def _loss(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "none"


def table(report: Mapping[str, Any]) -> list[str]:
    """The configurations' figures as markdown table rows, the header first."""
    rows = [
        "| configuration | acceptance length | acceptance rate | speedup vs off | verdict |",
        "|---|---|---|---|---|",
    ]
    for name, cell in report["configurations"].items():
        speed = cell.get("speedup") or {}
        rows.append(
            f"| {name} | {_figure(cell.get('acceptance_length'))} | {_figure(cell.get('acceptance_rate'), 3)} | "
            f"{_figure(speed if speed.get('value') is not None else None)} | {speed.get('verdict') or 'n/a'} |"
        )
    return rows


def markdown(report: Mapping[str, Any]) -> str:
    draft = report["draft"]
    lines = [
        "# Held-out acceptance",
        "",
        f"{draft.get('held_out_requests')} held-out requests (never trained on), replayed against each "
        f"configuration in {draft.get('rounds')} bench --serve rounds; K = {draft.get('num_speculative_tokens')}. "
        "Figures: value [95% interval].",
        "",
        *table(report),
    ]
    verdict = "above both" if report["trained_wins"] else "not above both"
    lines += [
        "",
        f"The trained draft's acceptance length interval lies {verdict} the untrained draft's and n-gram's.",
        f"Library: {draft.get('library')}; {draft.get('steps')} steps, final loss {_loss(draft.get('final_loss'))}; "
        f"hidden states: {draft.get('hidden_states_path')}.",
    ]
    for warning in report.get("warnings") or []:
        lines.append(f"- note: {warning}")
    return "\n".join(lines) + "\n"
