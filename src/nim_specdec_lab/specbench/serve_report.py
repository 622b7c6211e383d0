"""report.json of `bench --serve` from its rounds (pure: measurements in, plain data out).

Each comparison (a category at a concurrency) gets the paired rounds' speedup, its 95% interval and a
verdict (nim_specdec_lab.stats); its tables and plots show the median round of each side. The expected
speedup on the traffic weighs the concurrencies by how many requests the capture had in flight.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from nim_specdec_lab import stats
from nim_specdec_lab.replay.spec import ReplayMeasurement
from nim_specdec_lab.specbench.compare import compare
from nim_specdec_lab.specbench.serve_rounds import ORDER

LABELS = {"off": "baseline", "on": "candidate"}
IGNORE_EOS = (
    "--ignore-eos generates to max_tokens whatever the model emits: the forced continuations repeat "
    "themselves, which n-gram and suffix drafts predict well, so their acceptance and speedup read "
    "higher than on the captured traffic"
)


@dataclass(frozen=True)
class RoundRun:
    round_no: int
    side: str  # "baseline" or "candidate"
    concurrency: int
    category: str
    run: ReplayMeasurement


def capture_in_flight(timestamps_ms: Sequence[int] | None, runs: Sequence[RoundRun], category: str) -> float | None:
    """Requests the capture had in flight on average (Little's law): its arrival rate times the baseline's
    request time at the lowest measured concurrency (the least queueing), averaged over the rounds; the
    server's own mean latency where it has one, else the client's median."""
    if not timestamps_ms:
        return None
    mine = [r for r in runs if r.category == category and r.side == "baseline"]
    if not mine:
        return None
    lowest = min(r.concurrency for r in mine)
    times = [
        r.run.server_means.get("latency_mean_s") or r.run.latency_s.get("p50") for r in mine if r.concurrency == lowest
    ]
    times = [t for t in times if t]
    return stats.in_flight(timestamps_ms, times) if times else None


def comparison_name(category: str, concurrency: int, several: bool) -> str:
    return f"{category} @ {concurrency}" if several else category


def _median_run(runs: Sequence[ReplayMeasurement]) -> ReplayMeasurement:
    ordered = sorted(runs, key=lambda r: r.output_tokens_per_s)
    return ordered[(len(ordered) - 1) // 2]


def serve_report(
    runs: Sequence[RoundRun],
    margin: float,
    baseline_off: bool,
    levels: Mapping[str, float | None] | None = None,
    notes: Mapping[str, Any] | None = None,
    ignore_eos: bool = False,
) -> dict[str, Any]:
    """`levels[category]`: requests the capture had in flight on average (None: unknown)."""
    concurrencies = sorted({r.concurrency for r in runs})
    several = len(concurrencies) > 1
    grouped: dict[tuple[str, int], dict[str, dict[int, ReplayMeasurement]]] = {}
    for r in runs:
        grouped.setdefault((r.category, r.concurrency), {"baseline": {}, "candidate": {}})[r.side][r.round_no] = r.run
    found: dict[str, dict[str, ReplayMeasurement]] = {"off": {}, "on": {}}
    results: dict[tuple[str, int], stats.Speedup | None] = {}
    for (category, c), sides in grouped.items():
        name = comparison_name(category, c, several)
        for mode, side in (("off", "baseline"), ("on", "candidate")):
            if sides[side]:
                found[mode][name] = _median_run(list(sides[side].values()))
        both = sorted(set(sides["baseline"]) & set(sides["candidate"]))
        pairs = [(sides["baseline"][n].output_tokens_per_s, sides["candidate"][n].output_tokens_per_s) for n in both]
        pairs = [p for p in pairs if p[0] > 0 and p[1] > 0]
        results[(category, c)] = stats.paired(pairs, margin) if pairs else None
    report = compare(found, LABELS, baseline_off)
    by_name = {comparison_name(k[0], k[1], several): (k, v) for k, v in results.items()}
    for row in report["rows"]:
        key, result = by_name[row["category"]]
        row["concurrency"] = key[1]
        sides = grouped[key]
        row["rounds_tokens_per_s"] = {
            side: {str(n): round(m.output_tokens_per_s, 3) for n, m in sorted(sides[side].items())}
            for side in ("baseline", "candidate")
        }
        if row.get("speedup_note") or result is None:
            row.update(speedup=None, speedup_interval=None, verdict=None, rounds=0, detectable=None)
            continue
        row.update(result.to_json())
    report["stats"] = {"method": stats.METHOD, "margin": margin, "order": ORDER}
    report["expected"] = _expected(results, levels or {}, margin, concurrencies, report)
    if notes:
        report["trace_notes_detail"] = dict(notes)
        report["trace_notes"] = [line for block in notes.values() for line in block["lines"]]
    if ignore_eos:
        report["warnings"].append(IGNORE_EOS)
    return report


def _expected(
    results: Mapping[tuple[str, int], stats.Speedup | None],
    levels: Mapping[str, float | None],
    margin: float,
    concurrencies: Sequence[int],
    report: dict[str, Any],
) -> list[str]:
    """One line per category: the speedup on its traffic, weighted by the capture's concurrency."""
    lines, detail = [], {}
    for category in sorted({k[0] for k in results}):
        level = levels.get(category)
        weights = stats.concurrency_weights(level, concurrencies)
        parts = {c: results[(category, c)] for c in concurrencies if results.get((category, c)) is not None}
        if set(weights) - set(parts):
            continue
        # One concurrency carries all the weight: its own result, not a recombination (whose floating-point
        # round trip could print a figure that differs from the report's row in the last digit).
        combined = parts[next(iter(weights))] if len(weights) == 1 else stats.weighted(parts, weights, margin)
        if combined is None:
            continue
        where = (
            f"{level:.2f} in flight on average in the capture (Little's law), weights "
            + ", ".join(f"{w:.2f} at concurrency {c}" for c, w in sorted(weights.items()))
            if level is not None
            else "the capture has no timestamps: concurrencies weighed alike"
        )
        lines.append(stats.one_line(combined, f"on {category} ({where})"))
        detail[category] = {
            **combined.to_json(),
            "in_flight": level,
            "weights": {str(c): w for c, w in weights.items()},
        }
    report["expected_detail"] = detail
    return lines
