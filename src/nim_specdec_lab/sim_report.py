"""Rows, tables and recommendations of `simulate`, for every model-free method alike."""

from __future__ import annotations

from typing import Any, Sequence

from nim_specdec.config import variables as var
from nim_specdec_lab.ngram.grid import Scored
from nim_specdec_lab.ngram.grid import specdec_args_of as specdec_args
from nim_specdec_lab.ngram.simulator import NgramParams

# Short column names for the speculative-config keys of each method's table.
SHORT = {
    "num_speculative_tokens": "k",
    "prompt_lookup_min": "min",
    "prompt_lookup_max": "max",
    "suffix_decoding_max_tree_depth": "depth",
    "suffix_decoding_max_cached_requests": "cached",
    "suffix_decoding_max_spec_factor": "factor",
    "suffix_decoding_min_token_prob": "min_prob",
    "suffix_decoding_corpus_tokens": "corpus",
}
FIGURES = ("drafts", "draft_tokens", "accepted_tokens", "acceptance_rate", "acceptance_length", "speedup")


def speculative_config(params: Any) -> dict[str, Any]:
    """vLLM's speculative_config of a simulated setting."""
    if isinstance(params, NgramParams):
        return {
            "method": "ngram",
            "num_speculative_tokens": params.k,
            "prompt_lookup_max": params.max_n,
            "prompt_lookup_min": params.min_n,
        }
    return params.speculative_config()


def row(scored: Scored) -> dict[str, Any]:
    r = scored.result
    return {
        **speculative_config(r.params),
        "drafts": r.drafts,
        "draft_tokens": r.draft_tokens,
        "accepted_tokens": r.accepted,
        "acceptance_rate": round(r.acceptance_rate, 4),
        "acceptance_length": round(r.acceptance_length, 4),
        "speedup": round(scored.speedup, 4),
        "accepted_per_pos": list(r.accepted_per_pos),
        "model_runner": r.model_runner,
    }


def table(ranked: Sequence[Scored], limit: int | None, current: Scored | None = None) -> str:
    """One method's ranked rows as aligned text; the current setting's row is added (marked) if not shown."""
    shown = list(ranked if limit is None else ranked[:limit])
    at = None
    if current is not None:
        at = next((i for i, s in enumerate(shown) if s.result.params == current.result.params), None)
        if at is None:
            shown.append(current)
            at = len(shown) - 1
    rows = [row(s) for s in shown]
    if not rows:
        return ""
    keys = [k for k in rows[0] if k not in ("method", "accepted_per_pos", "model_runner")]
    header = [SHORT.get(k, k) for k in keys]
    cells = [[str(r[k]) for k in keys] for r in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(header)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(header, widths))]
    lines += [
        "  ".join(c.rjust(w) for c, w in zip(cell, widths)) + ("  <- current" if i == at else "")
        for i, cell in enumerate(cells)
    ]
    return "\n".join(lines)


# Settings where more may help: a best value at the top of its grid is worth a wider grid.
GROWABLE = (
    "num_speculative_tokens",
    "prompt_lookup_min",
    "prompt_lookup_max",
    "suffix_decoding_max_tree_depth",
    "suffix_decoding_max_spec_factor",
)


def edge_notes(method: str, ranked: Sequence[Scored]) -> list[dict[str, Any]]:
    """The best setting's values that are the largest of their grid (with more than one value tried)."""
    if not ranked:
        return []
    best = speculative_config(ranked[0].result.params)
    notes = []
    for key in GROWABLE:
        tried = {speculative_config(s.result.params).get(key) for s in ranked} - {None}
        if key in best and len(tried) > 1 and best[key] == max(tried):
            notes.append({"method": method, "key": key, "value": best[key]})
    return notes


def edge_line(note: dict[str, Any], flags: dict[str, str]) -> str:
    flag = flags.get(note["key"])
    widen = f"widen {flag}" if flag else "widen the grid"
    return f"{note['method']}: {note['key']}={note['value']} is the largest value tried; {widen} to see if more helps"


def recommended(best: Scored) -> dict[str, Any]:
    config = speculative_config(best.result.params)
    return {var.SPECDEC_ARGS: specdec_args(config), "speculative_config": config, **row(best)}


def recommendation_line(label: str, best: Scored) -> str:
    label = f"{label} [{best.result.model_runner.upper()} model runner]"
    if best.speedup <= 1.0:
        return f"{label}: no setting is predicted to help this traffic (best {best.speedup:.3f}x); keep speculation off"
    args = specdec_args(speculative_config(best.result.params))
    return (
        f"{label}: predicted speedup {best.speedup:.3f}x, acceptance length {best.result.acceptance_length:.3f}\n"
        f"  {var.SPECDEC_ARGS}='{args}'"
    )


def overall(by_method: dict[str, Sequence[Scored]]) -> Scored:
    """The best setting over all methods; ties go to the method listed first."""
    return max((ranked[0] for ranked in by_method.values()), key=lambda s: round(s.speedup, 9))


def summary(
    by_method: dict[str, Sequence[Scored]],
    meta: dict[str, Any],
    current: Scored | None = None,
    edges: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    return {
        **meta,
        "recommended": recommended(overall(by_method)),
        "recommended_per_method": {method: recommended(ranked[0]) for method, ranked in by_method.items()},
        "edge_of_grid": list(edges),
        "current": None if current is None else row(current),
        "grid": [row(s) for ranked in by_method.values() for s in ranked],
    }
