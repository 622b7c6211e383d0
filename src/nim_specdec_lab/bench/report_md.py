"""report.md from report.json's content (pure)."""

from __future__ import annotations

import json
from typing import Any, Sequence

from nim_specdec_lab.bench.compare import ARRIVAL_RATE, MODES


def _num(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _ms(percentiles: dict[str, float] | None) -> str:
    if not percentiles:
        return "-"
    return " / ".join(_num(percentiles.get(k) * 1000 if k in percentiles else None, 1) for k in ("p50", "p90", "p99"))


def _server(means: dict[str, float] | None) -> str:
    if not means:
        return "-"
    return " / ".join(
        _num(means[k] * 1000, 2) if k in means else "-" for k in ("ttft_mean_s", "tpot_mean_s", "latency_mean_s")
    )


def _table(header: Sequence[str], lines: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header), *("| " + " | ".join(c) + " |" for c in lines)]


def _schedule(side: dict[str, Any]) -> str:
    return "captured times" if side["schedule"] == "timestamps" else f"closed loop, {side['concurrency']} in flight"


def _sides(rows: list[dict[str, Any]], labels: dict[str, str] | None = None):
    """(row, the side's name as the report calls it, the side)."""
    for row in rows:
        for mode in MODES:
            if row[mode] is not None:
                yield row, (labels or {}).get(mode, mode), row[mode]


def _interval(row: dict[str, Any]) -> str:
    pair = row.get("speedup_interval")
    return f"[{pair[0]:.3f}, {pair[1]:.3f}]" if pair else "-"


def _speed_section(report: dict[str, Any]) -> list[str]:
    """The speedup of each comparison with its interval and verdict."""
    rows = [r for r in report["rows"] if r.get("speedup") is not None]
    if not rows:
        return []
    lines = []
    for row in rows:
        found = row.get("mde")
        lines.append(
            [
                row["category"],
                str(row.get("rounds") or 1),
                f"{row['speedup']:.3f}x",
                _interval(row),
                row.get("verdict") or row.get("verdict_note") or "-",
                f"{found['faster']:.3f}x faster or {found['slower']:.3f}x slower" if found else "-",
            ]
        )
    out = ["## Speedup", ""]
    out += _table(("comparison", "rounds", "speedup", "95% interval", "verdict", "MDE (80% power)"), lines)
    stats = report.get("stats")
    if stats:
        out += [
            "",
            f"- {stats['method']}.",
            f"- verdict: faster / slower where the interval lies beyond "
            f"1 +/- {stats['margin']:g}, else no measurable difference; MDE: the smallest true speedup (or "
            "slowdown) that a run of this many rounds finds with 80% probability at any spread the measured "
            "one leaves plausible (its 90% upper confidence bound).",
            f"- {stats['order']}.",
        ]
    if report.get("expected"):
        out += [f"- {line}." for line in report["expected"]]
    return out + [""]


def _cell(cell: dict[str, Any] | None) -> str:
    if not cell:
        return "-"
    pair = cell.get("interval")
    return f"{cell['value']:.2f}" + (f" [{pair[0]:.2f}, {pair[1]:.2f}]" if pair else "")


def _matrix_section(found: dict[str, Any] | None) -> list[str]:
    """The acceptance matrix as AIPerf's speed-bench-report prints it: a row per configuration, a column per
    category, then Overall; each figure with its 95% interval."""
    if not found:
        return []
    columns = found["columns"]
    out = ["## Acceptance by category", ""]
    for metric, title in (("acceptance_length", "Acceptance length"), ("acceptance_rate", "Acceptance rate")):
        lines = [[name, *(_cell(cells.get(c)) for c in columns)] for name, cells in found[metric].items()]
        out += [f"{title}:", "", *_table(("configuration", *columns), lines), ""]
    for name, counts in found["counts"].items():
        each = ", ".join(f"{c} {v['prompts']} ({v['responses']})" for c, v in counts.items())
        out.append(f"- {name}: prompts (responses) per category: {each}.")
    out += [
        "- acceptance length = 1 + accepted / verify steps; acceptance rate = accepted / drafted tokens; "
        "from each response's own counts (--per-request-spec-decode-metrics).",
        f"- {found['layout']}.",
        f"- [low, high]: {found['method']}.",
        "",
    ]
    return out


def markdown(report: dict[str, Any]) -> str:
    rows = report["rows"]
    labels = report.get("labels") or {m: m for m in MODES}
    title = "on vs off" if labels.get("on") == "on" else f"{labels['on']} vs {labels['off']}"
    out = [f"# Speculative decoding: {title}", ""]
    if any(side["schedule"] == "timestamps" for _, _, side in _sides(rows)):
        out += [f"**Note:** {ARRIVAL_RATE}.", ""]
    if report.get("trace_notes"):
        out += ["## What the trace holds that is not measured", "", *(f"- {n}" for n in report["trace_notes"]), ""]
    out += _speed_section(report)
    out += _matrix_section(report.get("acceptance_matrix"))
    out += ["## Throughput", ""]
    lines = []
    for row, mode, side in _sides(rows, labels):
        speedup = _num(row["speedup"], 3) + "x" if mode == labels["on"] and row["speedup"] is not None else ""
        lines.append(
            [
                row["category"],
                mode,
                f"{side['ok_count']}/{side['request_count']}",
                _schedule(side),
                str(side["output_tokens"]),
                _num(side["duration_s"], 2),
                _num(side["output_tokens_per_s"]),
                speedup,
            ]
        )
    out += _table(
        ("category", "mode", "requests ok/sent", "schedule", "output tokens", "duration s", "output tok/s", "speedup"),
        lines,
    )
    out += ["", f"- {report['how']['throughput']}.", f"- {report['how']['speedup']}."]
    if report.get("stats"):
        out += ["- each side's figures here are its median round; the speedup is the paired rounds' (see Speedup)."]
    out += [f"- {row['category']}: {row['speedup_note']}." for row in rows if row.get("speedup_note")]

    out += ["", "## Latency (ms, p50 / p90 / p99)", ""]
    lines = [
        [
            row["category"],
            mode,
            _ms(side["latency_s"]),
            _ms(side["ttft_s"]),
            _ms(side["itl_s"]),
            _server(side.get("server_means")),
        ]
        for row, mode, side in _sides(rows, labels)
    ]
    out += _table(
        (
            "category",
            "mode",
            "request latency",
            "time to first token",
            "inter-token latency",
            "server means: TTFT / TPOT / latency",
        ),
        lines,
    )
    out += [
        "",
        "The first three columns are AIPerf's, timed as the client read the stream; "
        f"{report['how'].get('server_means', 'server means: as the server timed them')}.",
    ]
    ratios = [
        f"{row['category']} {row['latency_p50_ratio']:.3f}" for row in rows if row["latency_p50_ratio"] is not None
    ]
    if ratios:
        out += ["", f"Request latency p50, off / on: {', '.join(ratios)}."]
    tpot = [f"{row['category']} {row['tpot_ratio']:.3f}" for row in rows if row.get("tpot_ratio") is not None]
    if tpot:
        out += ["", f"Server time per output token, off / on: {', '.join(tpot)}."]

    out += ["", f"## Acceptance ({'speculation on' if labels['on'] == 'on' else 'each side that drafted'})", ""]
    lines = []
    for row, mode, side in _sides(rows, labels):
        acc = side.get("acceptance")
        if mode != labels["on"] and not (acc and acc.get("drafts")):
            continue
        if not acc or acc.get("status") != "active":
            lines.append([row["category"], mode, "-", "-", "-", _num(acc["drafts"] if acc else None, 0)])
            continue
        per_pos = " ".join(f"{i + 1}:{rate:.3f}" for i, rate in enumerate(acc["per_position_rate"]))
        lines.append(
            [
                row["category"],
                mode,
                _num(acc["acceptance_rate"], 3),
                _num(acc["acceptance_length"], 3),
                per_pos or "-",
                _num(acc["drafts"], 0),
            ]
        )
    out += _table(
        ("category", "mode", "acceptance rate", "acceptance length", "per position (accepted / drafts)", "drafts"),
        lines,
    )
    out += [
        "",
        "Acceptance rate = accepted / drafted tokens; acceptance length = 1 + accepted / drafts (tokens per step);",
        "the server's spec-decode counters, growth during the run.",
    ]

    out += ["", "## What each server ran", ""]
    lines = []
    for row, mode, side in _sides(rows, labels):
        config = side.get("server_spec_config") or {}
        spec = config.get("speculative_config", "unknown") if config else "unknown"
        text = "off (none)" if spec is None else json.dumps(spec, sort_keys=True)
        lines.append([row["category"], mode, f"`{text}`", config.get("source", "-") if config else "-"])
    out += _table(("category", "mode", "speculative config", "read from"), lines)
    if report.get("warnings"):
        out += ["", "## Warnings", "", *(f"- {w}" for w in report["warnings"])]
    return "\n".join(out) + "\n"
