"""report.json of `bench --serve` from its rounds (pure: measurements in, plain data out).

Each comparison (a candidate against the baseline, on a workload at a concurrency) gets the paired rounds'
speedup, its 95% interval and a verdict (nim_specdec_lab.stats); its tables and plots show the median round
of each side. The expected speedup on the traffic weighs the concurrencies by how many requests the capture
had in flight. The acceptance matrix (configurations x categories) comes from every response of every side.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from nim_specdec_lab import stats
from nim_specdec_lab.bench import acceptance_matrix
from nim_specdec_lab.bench.compare import compare
from nim_specdec_lab.bench.serve_rounds import BASELINE, CANDIDATE, ORDER
from nim_specdec_lab.replay.spec import ReplayMeasurement

LABELS = {"off": "baseline", "on": "candidate"}
IGNORE_EOS = (
    "--ignore-eos generates to max_tokens whatever the model emits: the forced continuations repeat "
    "themselves, which n-gram and suffix drafts predict well, so their acceptance and speedup read "
    "higher than on the captured traffic"
)


@dataclass(frozen=True)
class RoundRun:
    round_no: int
    side: str  # "baseline", "candidate", or "candidate1" ... with several candidates
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


def comparison_name(category: str, concurrency: int, several: bool, candidate: str | None = None) -> str:
    """`category`, `category @ C` with several concurrencies, prefixed by the candidate with several."""
    name = f"{category} @ {concurrency}" if several else category
    return f"{candidate}: {name}" if candidate else name


def _median_run(runs: Sequence[ReplayMeasurement]) -> ReplayMeasurement:
    ordered = sorted(runs, key=lambda r: r.output_tokens_per_s)
    return ordered[(len(ordered) - 1) // 2]


Key = tuple[str, str, int]  # (candidate side, category, concurrency)


def _paired(
    runs: Sequence[RoundRun], margin: float
) -> tuple[dict[Key, dict[str, dict[int, ReplayMeasurement]]], dict[Key, stats.Speedup | None]]:
    """Each comparison's rounds (baseline and its candidate, by round) and its paired speedup."""
    base: dict[tuple[str, int], dict[int, ReplayMeasurement]] = {}
    for r in runs:
        if r.side == BASELINE:
            base.setdefault((r.category, r.concurrency), {})[r.round_no] = r.run
    grouped: dict[Key, dict[str, dict[int, ReplayMeasurement]]] = {}
    for r in runs:
        if r.side != BASELINE:
            key = (r.side, r.category, r.concurrency)
            grouped.setdefault(key, {"baseline": dict(base.get(key[1:], {})), "candidate": {}})
            grouped[key]["candidate"][r.round_no] = r.run
    results: dict[Key, stats.Speedup | None] = {}
    for key, sides in grouped.items():
        both = sorted(set(sides["baseline"]) & set(sides["candidate"]))
        pairs = [(sides["baseline"][n].output_tokens_per_s, sides["candidate"][n].output_tokens_per_s) for n in both]
        pairs = [p for p in pairs if p[0] > 0 and p[1] > 0]
        results[key] = stats.paired(pairs, margin) if pairs else None
    return grouped, results


def serve_report(
    runs: Sequence[RoundRun],
    margin: float,
    baseline_off: bool,
    levels: Mapping[str, float | None] | None = None,
    notes: Mapping[str, Any] | None = None,
    ignore_eos: bool = False,
) -> dict[str, Any]:
    """`levels[category]`: requests the capture had in flight on average (None: unknown). One comparison per
    candidate, category and concurrency, each against the baseline's servers of the same rounds."""
    concurrencies = sorted({r.concurrency for r in runs})
    candidates = sorted({r.side for r in runs if r.side != BASELINE}, key=_side_order)
    several_c, several_sides = len(concurrencies) > 1, len(candidates) > 1
    grouped, results = _paired(runs, margin)
    report = compare({}, LABELS, baseline_off)  # the explanations and labels; rows come per candidate
    for candidate in candidates:
        found: dict[str, dict[str, ReplayMeasurement]] = {"off": {}, "on": {}}
        keys = {}
        for key, sides in grouped.items():
            if key[0] != candidate:
                continue
            name = comparison_name(key[1], key[2], several_c, candidate if several_sides else None)
            keys[name] = key
            for mode, side in (("off", "baseline"), ("on", "candidate")):
                if sides[side]:
                    found[mode][name] = _median_run(list(sides[side].values()))
        part = compare(found, LABELS, baseline_off)
        for row in part["rows"]:
            key = keys[row["category"]]
            row["candidate"], row["concurrency"] = candidate, key[2]
            row["rounds_tokens_per_s"] = {
                side: {str(n): round(m.output_tokens_per_s, 3) for n, m in sorted(grouped[key][side].items())}
                for side in ("baseline", "candidate")
            }
            result = results[key]
            if row.get("speedup_note") or result is None:
                row.update(speedup=None, speedup_interval=None, verdict=None, rounds=0, mde=None)
            else:
                row.update(result.to_json())
        report["rows"] += part["rows"]
        report["warnings"] += [w for w in part["warnings"] if w not in report["warnings"]]
    report["stats"] = {"method": stats.METHOD, "margin": margin, "order": ORDER}
    report["expected"] = _expected(grouped, results, levels or {}, margin, concurrencies, report, several_sides)
    by_side: dict[str, list[ReplayMeasurement]] = {}
    for r in sorted(runs, key=lambda r: (_side_order(r.side), r.round_no, r.concurrency, r.category)):
        by_side.setdefault(r.side, []).append(r.run)
    report["acceptance_matrix"], found_notes = acceptance_matrix.from_runs(by_side)
    report["warnings"] += found_notes
    if notes:
        report["trace_notes_detail"] = dict(notes)
        report["trace_notes"] = [line for block in notes.values() for line in block["lines"]]
    if ignore_eos:
        report["warnings"].append(IGNORE_EOS)
    return report


def _side_order(side: str) -> tuple[int, int, str]:
    """The baseline, then candidate, candidate1, candidate2, ... in number order."""
    if side == BASELINE:
        return (0, 0, side)
    number = side[len(CANDIDATE) :]
    return (1, int(number) if number.isdigit() else 0, side)


def _figures(sides: Mapping[str, Mapping[int, ReplayMeasurement]], side: str) -> dict[int, float]:
    return {n: m.output_tokens_per_s for n, m in sides[side].items()}


def _expected(
    grouped: Mapping[Key, Mapping[str, Mapping[int, ReplayMeasurement]]],
    results: Mapping[Key, stats.Speedup | None],
    levels: Mapping[str, float | None],
    margin: float,
    concurrencies: Sequence[int],
    report: dict[str, Any],
    several_sides: bool,
) -> list[str]:
    """One line per candidate and category: the speedup on its traffic, weighted by the capture's concurrency
    within each round, the interval over rounds (stats.weighted_by_round)."""
    lines, detail = [], {}
    for candidate, category in sorted({k[:2] for k in results}, key=lambda k: (_side_order(k[0]), k[1])):
        level = levels.get(category)
        weights = stats.concurrency_weights(level, concurrencies)
        parts = {
            c: results[(candidate, category, c)]
            for c in concurrencies
            if results.get((candidate, category, c)) is not None
        }
        if set(weights) - set(parts):
            continue
        # One concurrency carries all the weight: its own result, not a recombination (whose floating-point
        # round trip could print a figure that differs from the report's row in the last digit).
        if len(weights) == 1:
            combined = parts[next(iter(weights))]
        else:
            keys = {c: (candidate, category, c) for c in weights}
            combined = stats.weighted_by_round(
                {c: _figures(grouped[k], "baseline") for c, k in keys.items()},
                {c: _figures(grouped[k], "candidate") for c, k in keys.items()},
                weights,
                margin,
            )
        if combined is None:
            continue
        where = (
            f"{level:.2f} in flight on average in the capture (Little's law), weights "
            + ", ".join(f"{w:.2f} at concurrency {c}" for c, w in sorted(weights.items()))
            if level is not None
            else "no timestamps in the input: concurrencies weighed alike"
        )
        what = f"of {candidate} on {category}" if several_sides else f"on {category}"
        lines.append(stats.one_line(combined, f"{what} ({where})"))
        detail[f"{candidate}: {category}" if several_sides else category] = {
            **combined.to_json(),
            "in_flight": level,
            "weights": {str(c): w for c, w in weights.items()},
        }
    report["expected_detail"] = detail
    return lines
