"""The grid of n-gram settings to try, the cost model that ranks them, and the recommendation."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Iterable, Sequence

from nim_specdec_lab.ngram.simulator import NgramParams, SimResult

DEFAULT_K = (1, 2, 3, 4, 5, 6, 8)
DEFAULT_MIN = (1, 2, 3, 4)
DEFAULT_MAX = (1, 2, 3, 4, 5)

# Relative cost of verifying one extra draft token, against one plain decode step. At low
# concurrency a GPU decode step is memory-bound and extra positions are cheap; this default
# stays on the cautious side. `--verify-cost` overrides it.
DEFAULT_VERIFY_COST = 0.1


# vLLM's n-gram lookups and K are small numbers; a range beyond this is a typo that would build a
# grid of millions of candidates (or a set of 10**12 integers).
MAX_VALUE = 1024
MAX_GRID = 4096


def list_items(text: str) -> list[str]:
    """The stripped, non-empty items of a comma-separated list as typed; ValueError for a list longer than
    10000 characters or one without an item."""
    if len(text) > 10000:
        raise ValueError("the list is longer than 10000 characters")
    items = [part.strip() for part in text.split(",") if part.strip()]
    if not items:
        raise ValueError(f"no values in {text!r}")
    return items


def parse_int_set(text: str) -> tuple[int, ...]:
    """'1,2,4-6' -> (1, 2, 4, 5, 6). Raises ValueError on anything else."""
    values: set[int] = set()
    for part in list_items(text):
        low, dash, high = part.partition("-")
        if len(low.strip()) > 6 or len(high.strip()) > 6:
            raise ValueError(f"bad range {part[:40]!r}: need integers from 1 to {MAX_VALUE}")
        lo, hi = int(low), int(high) if dash else int(low)
        if lo < 1 or hi < lo:
            raise ValueError(f"bad range {part!r}: need positive integers, low <= high")
        if hi > MAX_VALUE:
            raise ValueError(f"bad range {part!r}: need integers from 1 to {MAX_VALUE}")
        values.update(range(lo, hi + 1))
    return tuple(sorted(values))


def make_grid(ks: Iterable[int], mins: Iterable[int], maxes: Iterable[int]) -> list[NgramParams]:
    """Every (k, min, max) with min <= max; ValueError when that is more than MAX_GRID candidates."""
    ks, mins, maxes = list(ks), list(mins), list(maxes)
    if len(ks) * len(mins) * len(maxes) > MAX_GRID * 4:
        raise ValueError(f"{len(ks)} x {len(mins)} x {len(maxes)} values is more than {MAX_GRID} candidates")
    grid = [NgramParams(k, lo, hi) for k in ks for lo in mins for hi in maxes if lo <= hi]
    if len(grid) > MAX_GRID:
        raise ValueError(f"{len(grid)} candidates is more than {MAX_GRID}")
    return grid


def default_grid() -> list[NgramParams]:
    return make_grid(DEFAULT_K, DEFAULT_MIN, DEFAULT_MAX)


@dataclass(frozen=True)
class Scored:
    result: SimResult
    speedup: float


def predicted_speedup(result: SimResult, verify_cost: float) -> float:
    """Decode time without speculation over decode time with it, in units of one decode step.

    Both runs make the same prefills, so those cancel out. With speculation every step costs
    one decode step plus `verify_cost` per draft token it verifies.
    """
    spec_time = result.steps + verify_cost * result.draft_tokens
    return result.baseline_steps / spec_time if spec_time else 1.0


def rank(results: Sequence[SimResult], verify_cost: float) -> list[Scored]:
    """Best first; ties go to the cheaper setting (fewer draft tokens, then smaller k)."""
    scored = [Scored(r, predicted_speedup(r, verify_cost)) for r in results]
    return sorted(scored, key=lambda s: (-round(s.speedup, 9), s.result.draft_tokens, s.result.params.k))


def specdec_args_of(config: dict) -> str:
    """The NIM_SPECDEC_ARGS value for a speculative_config, the config as an object (the launcher also
    takes the guide's JSON string, but an object is not escaped twice inside a JSON report)."""
    return json.dumps({"speculative_config": config})


def specdec_args(params: NgramParams) -> str:
    """The NIM_SPECDEC_ARGS value for an n-gram setting."""
    return specdec_args_of(
        {
            "method": "ngram",
            "num_speculative_tokens": params.k,
            "prompt_lookup_max": params.max_n,
            "prompt_lookup_min": params.min_n,
        }
    )


def ngram_params(config: object) -> NgramParams | None:
    """The n-gram setting a speculative_config describes, with vLLM's defaults; None for another method."""
    if not isinstance(config, dict) or config.get("method") != "ngram":
        return None
    k = config.get("num_speculative_tokens")
    lo, hi = config.get("prompt_lookup_min"), config.get("prompt_lookup_max")
    if lo is None and hi is None:
        lo = hi = 5  # vLLM's choice when neither is given
    lo = hi if lo is None else lo
    hi = lo if hi is None else hi
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in (k, lo, hi)) or lo > hi:
        return None
    return NgramParams(int(k), int(lo), int(hi))
