"""Text and JSON views of a tuning run."""

from __future__ import annotations

from typing import Any, Sequence

from nim_specdec.tools.ngram.grid import Scored, specdec_args, speculative_config

HEADER = ("k", "min", "max", "drafts", "draft_tokens", "accepted", "accept_rate", "accept_len", "speedup")


def row(scored: Scored) -> dict[str, Any]:
    r = scored.result
    return {
        "k": r.params.k,
        "min": r.params.min_n,
        "max": r.params.max_n,
        "drafts": r.drafts,
        "draft_tokens": r.draft_tokens,
        "accepted": r.accepted,
        "accept_rate": round(r.acceptance_rate, 4),
        "accept_len": round(r.acceptance_length, 4),
        "speedup": round(scored.speedup, 4),
        "accepted_per_pos": list(r.accepted_per_pos),
    }


def table(ranked: Sequence[Scored], limit: int | None, current: Scored | None = None) -> str:
    """The best rows; the current setting's row is added (marked) when it is not among them."""
    shown = list(ranked if limit is None else ranked[:limit])
    marks = ["" for _ in shown]
    if current is not None:
        at = next((i for i, s in enumerate(shown) if s.result.params == current.result.params), None)
        if at is None:
            shown.append(current)
            marks.append("")
            at = len(shown) - 1
        marks[at] = "<- current"
    cells = [[str(row(s)[h]) for h in HEADER] for s in shown]
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(HEADER)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(HEADER, widths))]
    lines += [("  ".join(c.rjust(w) for c, w in zip(cell, widths)) + (f"  {mark}" if mark else "")).rstrip()
              for cell, mark in zip(cells, marks)]
    return "\n".join(lines)


def summary(ranked: Sequence[Scored], meta: dict[str, Any], current: Scored | None = None,
            notes: Sequence[str] = ()) -> dict[str, Any]:
    best = ranked[0].result.params
    return {
        **meta,
        "recommended": {
            "NIM_SPECDEC_ARGS": specdec_args(best),
            "speculative_config": speculative_config(best),
            **row(ranked[0]),
        },
        "edge_of_grid": list(notes),
        "current": None if current is None else {"speculative_config": speculative_config(current.result.params), **row(current)},
        "grid": [row(s) for s in ranked],
    }


def recommendation(ranked: Sequence[Scored], notes: Sequence[str] = ()) -> str:
    best = ranked[0]
    edge = "".join(f"\nnote: {note}" for note in notes)
    args = specdec_args(best.result.params)
    if best.speedup <= 1.0:
        return (
            f"no n-gram setting is predicted to help this traffic (best {best.speedup:.3f}x); "
            "keep speculation off, or try a draft model"
        ) + edge
    return (
        f"recommended (predicted speedup {best.speedup:.3f}x, acceptance length {best.result.acceptance_length:.3f}):\n"
        f"NIM_SPECDEC_ARGS='{args}'"
    ) + edge
