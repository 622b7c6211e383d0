"""The grid of suffix-decoding settings `simulate` tries, and how its flags are read."""

from __future__ import annotations

from typing import Callable, Iterable

from nim_specdec_lab.ngram.grid import list_items
from nim_specdec_lab.suffix.simulator import SuffixParams

# A small default: each point is a full pass over the trace through the real suffix trees.
DEFAULT_K = "4,8,16,24"
DEFAULT_DEPTH = "24"
DEFAULT_CACHED = "0,10000"
DEFAULT_FACTOR = "1.0"
DEFAULT_MIN_PROB = "0.1"


# More candidates than this is a typo: each one is a full simulation.
MAX_GRID = 4096


def parse_values(text: str, kind: Callable[[str], float], low: float, high: float | None = None) -> tuple:
    """'0,8,16' -> (0, 8, 16) for kind int; floats likewise. Raises ValueError outside [low, high]."""
    values = set()
    for part in list_items(text):
        if len(part) > 32:  # int() of thousands of digits is slow, then refused
            raise ValueError(f"{part[:20]!r}... is not a number of at most 32 characters")
        value = kind(part)
        if value in (float("inf"), float("-inf")):
            raise ValueError(f"{part!r} is not finite")
        if value != value or value < low or (high is not None and value > high):  # value != value: NaN
            bound = f"between {low} and {high}" if high is not None else f"at least {low}"
            raise ValueError(f"{part!r} is out of range: need {bound}")
        values.add(value)
    return tuple(sorted(values))


def make_grid(
    ks: Iterable[int],
    depths: Iterable[int],
    cached: Iterable[int],
    factors: Iterable[float],
    min_probs: Iterable[float],
) -> list[SuffixParams]:
    axes = [list(ks), list(depths), list(cached), list(factors), list(min_probs)]
    size = 1
    for axis in axes:
        size *= len(axis)
    if size > MAX_GRID:
        raise ValueError(f"{' x '.join(str(len(a)) for a in axes)} values is more than {MAX_GRID} candidates")
    return [
        SuffixParams(k, d, c, f, p) for k in axes[0] for d in axes[1] for c in axes[2] for f in axes[3] for p in axes[4]
    ]
