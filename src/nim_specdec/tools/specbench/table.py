"""The on/off comparison per category, as rows, Markdown and JSON."""

from __future__ import annotations

from typing import Any, Mapping

from nim_specdec.tools.specbench.aiperf_results import RunResult

COLUMNS = ("category", "accept_rate", "accept_len", "tok_s_on", "tok_s_off", "speedup")


def rows(on: Mapping[str, RunResult], off: Mapping[str, RunResult]) -> list[dict[str, Any]]:
    """One row per category measured in either mode; a missing side reads None."""
    out = []
    for category in sorted(set(on) | set(off)):
        a, b = on.get(category), off.get(category)
        speedup = a.output_tokens_per_s / b.output_tokens_per_s if a and b and b.output_tokens_per_s else None
        out.append(
            {
                "category": category,
                "accept_rate": None if a is None else a.acceptance_rate,
                "accept_len": None if a is None else a.acceptance_length,
                "tok_s_on": None if a is None else a.output_tokens_per_s,
                "tok_s_off": None if b is None else b.output_tokens_per_s,
                "speedup": speedup,
                "accepted_per_pos": [] if a is None else list(a.accepted_per_pos),
                "drafts": None if a is None else a.drafts,
            }
        )
    return out


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def markdown(table: list[dict[str, Any]]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(_cell(row[c]) for c in COLUMNS) + " |" for row in table]
    return "\n".join(lines) + "\n"
