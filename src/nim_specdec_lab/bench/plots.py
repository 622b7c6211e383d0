"""PNG plots of a comparison: throughput off vs on (values and speedup written on the bars), latency off
vs on, and acceptance by draft position. Legends sit outside the axes so that they never cover data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

COLORS = {"off": "#8c8c8c", "on": "#2f7ed8"}
LABELS = {"off": "speculation off", "on": "speculation on"}


def _pyplot():
    import matplotlib  # noqa: PLC0415 - ~300 ms; only a report with plots pays it

    matplotlib.use("Agg")  # files only, never a display
    import matplotlib.pyplot as plt  # noqa: PLC0415 - after use("Agg"): the backend is chosen first

    return plt


def _value(row: dict[str, Any], mode: str, *keys: str) -> float:
    value: Any = row.get(mode)
    for key in keys:
        value = (value or {}).get(key) if isinstance(value, dict) else None
    return float(value) if isinstance(value, (int, float)) else 0.0


def _legend_outside(ax) -> None:
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)


def _throughput(plt, rows: list[dict[str, Any]], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(rows) + 3), 4.2))
    xs = range(len(rows))
    width = 0.38
    top = 0.0
    for offset, mode in ((-width / 2, "off"), (width / 2, "on")):
        values = [_value(r, mode, "output_tokens_per_s") for r in rows]
        top = max(top, *values, 0.0)
        bars = ax.bar([x + offset for x in xs], values, width, label=LABELS[mode], color=COLORS[mode])
        ax.bar_label(bars, labels=[f"{v:.0f}" if v else "" for v in values], padding=2, fontsize=8)
    for x, row in zip(xs, rows):
        if row.get("speedup") is not None:
            pair = row.get("speedup_interval")
            text = f"{row['speedup']:.2f}x" + (f"\n[{pair[0]:.2f}, {pair[1]:.2f}]" if pair else "")
            ax.annotate(text, (x, top * 1.12), ha="center", fontsize=9, fontweight="bold")
    ax.set_ylim(0, top * 1.35 or 1)
    ax.set_xticks(list(xs), [r["category"] for r in rows])
    ax.set_ylabel("output tokens/s (server-counted)")
    ax.set_title("Throughput off vs on (bold: speedup on/off)")
    _legend_outside(ax)
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)


def _latency(plt, rows: list[dict[str, Any]], path: Path) -> None:
    """Top row: AIPerf's percentiles as the client read the stream; bottom row: the server's own means
    (on a small machine the client reads in bursts and its TTFT and inter-token figures say little)."""
    client = (("latency_s", "request latency"), ("ttft_s", "time to first token"), ("itl_s", "inter-token latency"))
    server = (
        ("latency_mean_s", "request latency"),
        ("ttft_mean_s", "time to first token"),
        ("tpot_mean_s", "time per output token"),
    )
    fig, axes = plt.subplots(2, 3, figsize=(max(9.0, 2.4 * len(rows) + 7), 7.6))
    xs = range(len(rows))
    width = 0.38
    for ax, (key, title) in zip(axes[0], client):
        top = 0.0
        for offset, mode in ((-width / 2, "off"), (width / 2, "on")):
            p50 = [_value(r, mode, key, "p50") * 1000 for r in rows]
            p90 = [_value(r, mode, key, "p90") * 1000 for r in rows]
            top = max(top, *p90, *p50, 0.0)
            bars = ax.bar(
                [x + offset for x in xs],
                p50,
                width,
                label=f"{LABELS[mode]} (p50, bar to p90)",
                color=COLORS[mode],
                yerr=[[0] * len(p50), [max(0.0, b - a) for a, b in zip(p50, p90)]],
                capsize=3,
            )
            # Inside the bar: above it sits the p90 whisker.
            ax.bar_label(
                bars, labels=[f"{v:.1f}" if v else "" for v in p50], label_type="center", fontsize=7, color="white"
            )
        ax.set_ylim(0, top * 1.2 or 1)
        ax.set_xticks(list(xs), [r["category"] for r in rows])
        ax.set_title(f"client: {title}")
        ax.set_ylabel("ms")
    for ax, (key, title) in zip(axes[1], server):
        top = 0.0
        for offset, mode in ((-width / 2, "off"), (width / 2, "on")):
            means = [_value(r, mode, "server_means", key) * 1000 for r in rows]
            top = max(top, *means, 0.0)
            bars = ax.bar(
                [x + offset for x in xs], means, width, label=f"{LABELS[mode]} (server mean)", color=COLORS[mode]
            )
            ax.bar_label(bars, labels=[f"{v:.2f}" if v else "-" for v in means], padding=2, fontsize=8)
        ax.set_ylim(0, top * 1.2 or 1)
        ax.set_xticks(list(xs), [r["category"] for r in rows])
        ax.set_title(f"server: {title}")
        ax.set_ylabel("ms")
    _legend_outside(axes[0][-1])
    _legend_outside(axes[1][-1])
    fig.subplots_adjust(wspace=0.4, hspace=0.35)  # room for each panel's own y label and title
    fig.suptitle(
        "Latency off vs on: as the client saw it (p50, whisker to p90) and as the server timed it (mean)", y=0.99
    )
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)


def _acceptance(plt, rows: list[dict[str, Any]], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 1
    for row in rows:
        acc = (row.get("on") or {}).get("acceptance") or {}
        rates = acc.get("per_position_rate") or []
        if rates:
            positions = list(range(1, len(rates) + 1))
            width = max(width, len(rates))
            ax.plot(positions, rates, marker="o", label=f"{row['category']} (AL {acc['acceptance_length']:.2f})")
            for x, y in zip(positions, rates):
                ax.annotate(f"{y:.2f}", (x, y), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=8)
    ax.set_xticks(list(range(1, width + 1)))
    ax.set_xlabel("draft position (1 = first drafted token)")
    ax.set_ylabel("accepted / drafts")
    ax.set_ylim(0, 1.12)
    ax.set_title("Acceptance by draft position (speculation on)")
    if ax.lines:
        _legend_outside(ax)
    else:
        ax.text(0.5, 0.5, "no drafts counted", ha="center", va="center", transform=ax.transAxes)
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)


def _speedup(plt, rows: list[dict[str, Any]], labels: dict[str, str], path: Path) -> None:
    """Each comparison's speedup with its 95% interval as an error bar; 1 (no change) as a line."""
    rows = [r for r in rows if r.get("speedup") is not None]
    fig, ax = plt.subplots(figsize=(max(6.0, 1.4 * len(rows) + 3), 4.2))
    xs = list(range(len(rows)))
    for x, row in zip(xs, rows):
        pair = row.get("speedup_interval")
        error = [[row["speedup"] - pair[0]], [pair[1] - row["speedup"]]] if pair else None
        ax.errorbar([x], [row["speedup"]], yerr=error, fmt="o", capsize=6, color=COLORS["on"])
        ax.annotate(
            f"{row['speedup']:.2f}x\n{row.get('verdict') or 'no interval'}",
            (x, row["speedup"]),
            textcoords="offset points",
            xytext=(12, 0),
            va="center",
            fontsize=8,
        )
    ax.axhline(1.0, color=COLORS["off"], linestyle="--", linewidth=1)
    ax.set_xticks(xs, [r["category"] for r in rows])
    ax.set_xlim(-0.6, max(len(rows) - 0.4, 0.6))
    ax.set_ylabel(f"speedup {labels['on']} / {labels['off']}")
    ax.set_title("Speedup with its 95% interval (bars)")
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)


def _by_category(plt, found: dict[str, Any], path: Path) -> None:
    """The acceptance matrix's lengths: one marker per configuration and category, its 95% interval as the
    bar, Overall last."""
    columns = found["columns"]
    rows = found["acceptance_length"]
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(columns) + 3), 4.2))
    step = 0.8 / max(1, len(rows))
    for i, (name, cells) in enumerate(rows.items()):
        xs, ys, errors = [], [], [[], []]
        for x, column in enumerate(columns):
            cell = cells.get(column)
            if not cell:
                continue
            low, high = cell["interval"] or (cell["value"], cell["value"])
            xs.append(x - 0.4 + step * (i + 0.5))
            ys.append(cell["value"])
            errors[0].append(max(0.0, cell["value"] - low))
            errors[1].append(max(0.0, high - cell["value"]))
        ax.errorbar(xs, ys, yerr=errors, fmt="o", capsize=4, label=name)
    ax.set_xticks(range(len(columns)), columns, rotation=30, ha="right")
    ax.set_ylabel("acceptance length (tokens per step)")
    ax.set_title("Acceptance length by category, with its 95% interval")
    _legend_outside(ax)
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)


def write_plots(report: dict[str, Any], directory: Path) -> list[Path]:
    plt = _pyplot()
    rows = report["rows"]
    labels = report.get("labels") or {"off": "off", "on": "on"}
    names = ("throughput_on_off.png", "latency_on_off.png", "acceptance_by_position.png", "speedup_interval.png")
    paths = [directory / name for name in names]
    _throughput(plt, rows, paths[0])
    _latency(plt, rows, paths[1])
    _acceptance(plt, rows, paths[2])
    _speedup(plt, rows, labels, paths[3])
    by_category = directory / "acceptance_by_category.png"
    if report.get("acceptance_matrix"):
        _by_category(plt, report["acceptance_matrix"], by_category)
        paths.append(by_category)
    else:
        by_category.unlink(missing_ok=True)  # an earlier run's, which this report does not stand behind
    return paths
