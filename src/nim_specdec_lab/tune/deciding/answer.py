"""tune's answer in one line: the recommendation's expected speedup over off on this traffic, with its 95%
interval from the measured rounds, weighted by the concurrency the capture had (pure): the weighted log
ratio within each round, then the interval over rounds (stats.weighted_by_round).

Rounds pair by position: the recommendation's n-th server with off's n-th, started in the same pass over
tune's lineup (tune.runs.rounds). They were measured minutes apart on different servers, so the interval carries
the drift between them too: it is wide, which is what it should be.

The interval shown is the one for a configuration picked among `family` candidates (stats.picked_interval:
simultaneous over them), since the recommendation was picked as the largest; the recommendation's own
interval is kept beside it as `own_interval`.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from nim_specdec_lab import stats


def answer(
    off: Mapping[int, Mapping[int, float]],
    recommended: Mapping[int, Mapping[int, float]] | None,
    level: float | None,
    margin: float,
    family: int = 1,
) -> dict[str, Any]:
    """`off[c]` / `recommended[c]`: round -> judged tokens/s of that round's server at concurrency c;
    `recommended` None: the recommendation is speculation off. `level`: requests the capture had in flight."""
    weights = stats.concurrency_weights(level, sorted(off))
    where = (
        f"{level:.2f} in flight on average in the capture (Little's law)"
        if level is not None
        else "no timestamps in the capture: concurrencies weighed alike"
    )
    base = {"in_flight": level, "weights": {str(c): round(w, 4) for c, w in weights.items()}}
    if recommended is None:
        return {
            **base,
            "speedup": 1.0,
            "speedup_interval": None,
            "verdict": None,
            "line": f"tune: speculation off recommended: expected speedup on this traffic 1.000x ({where})",
        }
    if any(not off.get(c) or not recommended.get(c) for c in weights):
        return {
            **base,
            "speedup": None,
            "speedup_interval": None,
            "verdict": None,
            "line": "tune: expected speedup on this traffic: not measured at every concurrency it weighs",
        }
    combined = stats.weighted_by_round(off, recommended, weights, margin)
    if combined is None:
        return {
            **base,
            "speedup": None,
            "speedup_interval": None,
            "verdict": None,
            "line": "tune: expected speedup on this traffic: no round measured every concurrency it weighs",
        }
    picked = stats.picked_interval(combined, family)
    own = combined.to_json()
    result = {
        **base,
        **own,
        "speedup_interval": None if picked is None else [round(picked[0], 4), round(picked[1], 4)],
        "own_interval": own["speedup_interval"],
        "candidates": family,
        "interval_method": stats.PICKED_METHOD,
        "line": "tune: " + stats.one_line(combined, f"on this traffic ({where})"),
    }
    if picked is not None:
        among = "the only candidate" if family < 2 else f"the configuration picked among {family} candidates"
        result["line"] = (
            f"tune: expected speedup on this traffic ({where}): {combined.speedup:.3f}x, 95% interval "
            f"[{picked[0]:.3f}, {picked[1]:.3f}] for {among} (simultaneous, Bonferroni at "
            f"{stats.PICKED_LEVEL:.1%}); its own interval [{combined.interval[0]:.3f}, {combined.interval[1]:.3f}] "
            f"over {combined.rounds} rounds: {combined.verdict}"
        )
    if combined.verdict != stats.FASTER:
        result["line"] += "; these rounds cannot tell it from off (more --rounds narrow the interval)"
    return result


def trace_level(timestamps_ms: Sequence[int | None], off_latencies_s: Sequence[float]) -> float | None:
    """Little's law on the capture: its arrival rate times off's mean request time."""
    stamps = [t for t in timestamps_ms if t is not None]
    if len(stamps) != len(timestamps_ms):
        return None
    return stats.in_flight(stamps, off_latencies_s)
