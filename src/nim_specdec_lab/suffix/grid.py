"""The grid of suffix-decoding settings `simulate` tries, and how its flags are read."""

from __future__ import annotations

from typing import Callable, Iterable

from nim_specdec_lab.suffix.simulator import SuffixParams

# A small default: each point is a full pass over the trace through the real suffix trees.
DEFAULT_K = "4,8,16,24"
DEFAULT_DEPTH = "24"
DEFAULT_CACHED = "0,10000"
DEFAULT_FACTOR = "1.0"
DEFAULT_MIN_PROB = "0.1"


def parse_values(text: str, kind: Callable[[str], float], low: float, high: float | None = None) -> tuple:
    """'0,8,16' -> (0, 8, 16) for kind int; floats likewise. Raises ValueError outside [low, high]."""
    values = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        value = kind(part)
        if value != value or value < low or (high is not None and value > high):  # value != value: NaN
            bound = f"between {low} and {high}" if high is not None else f"at least {low}"
            raise ValueError(f"{part!r} is out of range: need {bound}")
        values.add(value)
    if not values:
        raise ValueError(f"no values in {text!r}")
    return tuple(sorted(values))


def make_grid(
    ks: Iterable[int], depths: Iterable[int], cached: Iterable[int], factors: Iterable[float], min_probs: Iterable[float]
) -> list[SuffixParams]:
    return [
        SuffixParams(k, d, c, f, p)
        for k in ks for d in depths for c in cached for f in factors for p in min_probs
    ]
