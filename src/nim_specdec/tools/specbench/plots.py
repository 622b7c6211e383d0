"""PNG plots of a comparison: acceptance by draft position, and throughput on vs off per category."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def write_plots(table: list[dict[str, Any]], directory: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")  # files only, never a display
    import matplotlib.pyplot as plt

    written = []
    fig, ax = plt.subplots(figsize=(7, 4))
    for row in table:
        per_pos, drafts = row["accepted_per_pos"], row["drafts"]
        if per_pos and drafts:
            ax.plot(range(len(per_pos)), [n / drafts for n in per_pos], marker="o", label=row["category"])
    ax.set_xlabel("draft position")
    ax.set_ylabel("acceptance (accepted / drafts)")
    ax.set_ylim(0, 1.05)
    ax.set_title("Acceptance by draft position")
    if ax.lines:
        ax.legend()
    written.append(directory / "acceptance_by_position.png")
    fig.savefig(written[-1], dpi=100, bbox_inches="tight")
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4))
    names = [row["category"] for row in table]
    xs = range(len(names))
    width = 0.4
    ax.bar([x - width / 2 for x in xs], [row["tok_s_off"] or 0 for row in table], width, label="speculation off")
    ax.bar([x + width / 2 for x in xs], [row["tok_s_on"] or 0 for row in table], width, label="speculation on")
    ax.set_xticks(list(xs), names)
    ax.set_ylabel("output tokens/s")
    ax.set_title("Throughput on vs off")
    ax.legend()
    written.append(directory / "throughput_on_off.png")
    fig.savefig(written[-1], dpi=100, bbox_inches="tight")
    plt.close(fig)
    return written
