"""Text and JSON views of a tuning run."""

from __future__ import annotations

from typing import Any, Sequence

from nim_specdec.tools.ngram.grid import Scored, specdec_args, speculative_config_arg

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


def table(ranked: Sequence[Scored], limit: int | None) -> str:
    shown = ranked if limit is None else ranked[:limit]
    cells = [[str(row(s)[h]) for h in HEADER] for s in shown]
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(HEADER)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(HEADER, widths))]
    lines += ["  ".join(c.rjust(w) for c, w in zip(cell, widths)) for cell in cells]
    return "\n".join(lines)


def summary(ranked: Sequence[Scored], meta: dict[str, Any]) -> dict[str, Any]:
    best = ranked[0].result.params
    return {
        **meta,
        "recommended": {
            "NIM_SPECDEC_ARGS": specdec_args(best),
            "speculative_config": speculative_config_arg(best),
            **row(ranked[0]),
        },
        "grid": [row(s) for s in ranked],
    }


def recommendation(ranked: Sequence[Scored]) -> str:
    best = ranked[0]
    args = specdec_args(best.result.params)
    if best.speedup <= 1.0:
        return (
            f"no n-gram setting is predicted to help this traffic (best {best.speedup:.3f}x); "
            "keep speculation off, or try a draft model"
        )
    return (
        f"recommended (predicted speedup {best.speedup:.3f}x, acceptance length {best.result.acceptance_length:.3f}):\n"
        f"NIM_SPECDEC_ARGS='{args}'"
    )
