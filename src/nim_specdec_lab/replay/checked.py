"""Numbers read back from a measurement the lab wrote (measurement.json), checked where they are read.

A file under OUT may have been edited, truncated or planted: every number is a JSON number (not a bool, not
NaN or Infinity, which Python's json module lets through), finite and inside its stated range, or the
reader raises ValueError naming the key and the range, which bench turns into its one-line refusal
(exit 2). Past these checks no figure can overflow the report's arithmetic or reach its JSON as a
non-number.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

MAX_COUNT = 10**12  # requests, tokens, drafts: far beyond any run
MAX_SECONDS = 10.0**7  # a run's duration or a latency: about 115 days
MAX_TOKENS_PER_S = 10.0**9
MAX_CONCURRENCY = 100_000


def number(value: Any, key: str, high: float, low: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{key} is {str(value)[:40]!r}, not a finite number")
    if not low <= value <= high:
        raise ValueError(f"{key} is {value:.6g}, outside [{low:g}, {high:g}]")
    return float(value)


def count(value: Any, key: str, high: int = MAX_COUNT, low: int = 0) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # a count written as 12.0 by an older writer
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{key} is {str(value)[:40]!r}, not an integer from {low} to {high}")
    return value


def figures(data: Any, key: str, high: float) -> dict[str, float]:
    """A {name: number} table (latency percentiles, means): every value checked; a null is a figure absent."""
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ValueError(f"{key} is not an object")
    return {str(k): number(v, f"{key}.{k}", high) for k, v in data.items() if v is not None}
