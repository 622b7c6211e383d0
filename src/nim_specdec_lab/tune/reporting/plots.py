"""PNG plots of tune's result: tokens/s against concurrency per configuration (measured solid, predicted
dashed, same colour), each configuration's speedup over off with its 95% interval, and the chosen K per
batch size."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping


def write_plots(result: Mapping[str, Any], directory: Path) -> list[Path]:
    """The files written; none when matplotlib is missing (it comes with the `bench` extra)."""
    try:
        import matplotlib  # noqa: PLC0415 - ~300 ms, and optional: no plots without it
    except ImportError:
        return []
    matplotlib.use("Agg")  # files only, never a display
    import matplotlib.pyplot as plt  # noqa: PLC0415 - after use("Agg"): the backend is chosen first

    written = []
    fig, ax = plt.subplots(figsize=(8, 5))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for index, row in enumerate(result["configurations"]):
        colour = colours[index % len(colours)]
        for key, style, suffix in (
            ("measured_tokens_per_s", "-", "measured"),
            ("predicted_tokens_per_s", "--", "predicted"),
        ):
            points = sorted((int(c), v) for c, v in row[key].items())
            if points:
                ax.plot(
                    [c for c, _ in points],
                    [v for _, v in points],
                    style,
                    color=colour,
                    marker="o" if style == "-" else None,
                    linewidth=2 if row.get("recommended") else 1.2,
                    label=f"{row['name']} ({suffix})",
                )
    ax.set_xscale("log", base=2)
    ax.set_xticks(result["concurrencies"], [str(c) for c in result["concurrencies"]])
    ax.set_xlabel("concurrency (requests in flight, closed loop)")
    ax.set_ylabel("output tokens/s")
    ax.set_title("Measured (solid) and predicted (dashed) throughput")
    ax.legend(fontsize=7, ncol=2)
    written.append(directory / "tokens_per_s.png")
    fig.savefig(written[-1], dpi=100, bbox_inches="tight")
    plt.close(fig)

    written.append(_speedups(plt, result, directory))

    fig, ax = plt.subplots(figsize=(8, 3.5))
    for method in result["methods"]:
        ks = method["k_by_batch_size"]
        ax.step(range(1, len(ks) + 1), ks, where="mid", label=f"{method['method']} (score {method['score']:.2f})")
    ax.set_xlabel("batch size")
    ax.set_ylabel("K (0 = off)")
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.set_title("Best K per batch size, as predicted")
    if ax.lines:
        ax.legend(fontsize=8)
    written.append(directory / "k_per_batch_size.png")
    fig.savefig(written[-1], dpi=100, bbox_inches="tight")
    plt.close(fig)
    return written


def _speedups(plt, result: Mapping[str, Any], directory: Path) -> Path:
    """Speedup over off per concurrency, the 95% interval as error bars; a configuration measured in one
    round has points without bars."""
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for index, row in enumerate(r for r in result["configurations"] if r["kind"] != "off"):
        points = sorted((int(c), s) for c, s in row.get("vs_off", {}).items() if s)
        if not points:
            continue
        xs = [c * (1.0 + 0.04 * index) for c, _ in points]  # side by side, not on top of one another
        ys = [s["speedup"] for _, s in points]
        bars = [
            (y - s["speedup_interval"][0], s["speedup_interval"][1] - y) if s.get("speedup_interval") else (0.0, 0.0)
            for y, (_, s) in zip(ys, points)
        ]
        ax.errorbar(
            xs,
            ys,
            yerr=[[b[0] for b in bars], [b[1] for b in bars]],
            fmt="o-",
            capsize=3,
            linewidth=2 if row.get("recommended") else 1.2,
            label=row["name"] + (" (recommended)" if row.get("recommended") else ""),
        )
    ax.axhline(1.0, color="grey", linewidth=1)
    ax.set_xscale("log", base=2)
    ax.set_xticks(result["concurrencies"], [str(c) for c in result["concurrencies"]])
    ax.set_xlabel("concurrency (requests in flight, closed loop)")
    ax.set_ylabel("speedup over speculation off")
    ax.set_title("Speedup over off with 95% intervals over the paired rounds")
    if ax.lines:
        ax.legend(fontsize=7)
    path = directory / "speedup_vs_off.png"
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)
    return path
