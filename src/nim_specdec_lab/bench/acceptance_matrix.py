"""The acceptance matrix: configurations x categories, with an Overall column (pure).

Laid out as AIPerf's `speed-bench-report` lays out its SPEED-Bench matrix: a row per configuration (AIPerf:
per model), a column per category in SPEED-Bench's order (qualitative categories, else throughput tiers,
else alphabetical), then `Overall`, the plain mean of the row's categories; one matrix for acceptance length
and one for acceptance rate. Where AIPerf needs one run per category (its figures come from the server's
counters), here every figure comes from the responses of one run per configuration: each response carries
its own acceptance (replay.request_acceptance), and its request's category says where it counts. Each cell
is a measured ratio and carries its 95% interval (bench.acceptance_interval).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from nim_specdec_lab.bench.acceptance_interval import METHOD, Ratio, mean_of, ratio
from nim_specdec_lab.bench.inputs import SPEED_BENCH_CATEGORIES
from nim_specdec_lab.replay.request_acceptance import RequestAcceptance
from nim_specdec_lab.replay.spec import ReplayMeasurement

THROUGHPUT_TIERS = ("low_entropy", "mixed", "high_entropy")
OVERALL = "Overall"
METRICS = ("acceptance_length", "acceptance_rate")
LAYOUT = (
    "AIPerf speed-bench-report's layout: a row per configuration, a column per category, Overall = the mean "
    "of the row's categories; every figure from the responses of one run per configuration"
)
NO_PER_REQUEST = (
    "{name} drafted, but its server reported no per-request acceptance: start it with "
    "--per-request-spec-decode-metrics summary (vLLM 0.32 or later) for acceptance by category"
)


def columns(categories: Sequence[str]) -> list[str]:
    found = set(categories)
    for order in (SPEED_BENCH_CATEGORIES, THROUGHPUT_TIERS):
        if found <= set(order):
            return [c for c in order if c in found]
    return sorted(found)


def _by_prompt(records: Sequence[RequestAcceptance]) -> dict[int, tuple[int, int, int]]:
    """Each prompt's (accepted, steps, draft tokens), summed over all its responses."""
    out: dict[int, tuple[int, int, int]] = {}
    for r in records:
        a, s, d = out.get(r.request, (0, 0, 0))
        out[r.request] = (a + r.accepted, s + r.steps, d + r.draft_tokens)
    return out


def _cells(records: Sequence[RequestAcceptance]) -> tuple[Ratio | None, Ratio | None, dict[str, int]]:
    prompts = _by_prompt(records)
    width = max((len(r.histogram) - 1 for r in records), default=0)
    length = ratio([(a, s) for a, s, _ in prompts.values()])
    rate = ratio([(a, d) for a, _, d in prompts.values()])
    counts = {
        "prompts": len(prompts),
        "responses": len(records),
        "steps": sum(r.steps for r in records),
        "draft_tokens": sum(r.draft_tokens for r in records),
        "accepted": sum(r.accepted for r in records),
    }
    return (
        None if length is None else length.shifted(1.0, 1.0, 1.0 + width),
        None if rate is None else rate.shifted(0.0, 0.0, 1.0),
        counts,
    )


def matrix(configurations: Mapping[str, Sequence[RequestAcceptance]]) -> dict[str, Any] | None:
    """`configurations[name]`: every response of that configuration (all its runs); None when none has any."""
    used = {name: records for name, records in configurations.items() if records}
    if not used:
        return None
    cols = columns([r.label for records in used.values() for r in records])
    out: dict[str, Any] = {"layout": LAYOUT, "method": METHOD, "columns": [*cols, OVERALL], "counts": {}}
    for metric in METRICS:
        out[metric] = {}
    for name, records in used.items():
        rows: dict[str, dict[str, Any]] = {metric: {} for metric in METRICS}
        parts: dict[str, list[Ratio]] = {metric: [] for metric in METRICS}
        out["counts"][name] = {}
        for category in cols:
            mine = [r for r in records if r.label == category]
            if not mine:
                continue
            length, rate, counts = _cells(mine)
            out["counts"][name][category] = counts
            for metric, found in zip(METRICS, (length, rate)):
                if found is not None:
                    rows[metric][category] = found.to_json()
                    parts[metric].append(found)
        for metric in METRICS:
            overall = mean_of(parts[metric])
            if overall is not None:
                rows[metric][OVERALL] = overall.to_json()
            out[metric][name] = rows[metric]
    return out


def uncovered(name: str, runs: Sequence[ReplayMeasurement]) -> list[str]:
    """Runs whose responses' acceptance does not add up to the drafts the server counted meanwhile (failed
    requests, or traffic from elsewhere): the matrix then covers part of what the server did."""
    out = []
    for run in runs:
        records = run.requests_acceptance
        if records is None or run.spec is None:
            continue
        steps, accepted = sum(r.steps for r in records), sum(r.accepted for r in records)
        if (steps, accepted) != (round(run.spec.drafts), round(run.spec.accepted)):
            out.append(
                f"{name}: the responses' acceptance covers {steps} of the {run.spec.drafts:g} drafts and {accepted} "
                f"of the {run.spec.accepted:g} accepted tokens the server counted during a run (failed requests, "
                "or other traffic on the server)"
            )
    return out


def from_runs(runs: Mapping[str, Sequence[ReplayMeasurement]]) -> tuple[dict[str, Any] | None, list[str]]:
    """The matrix of every configuration whose responses carried acceptance, and what the reader must know
    about the others."""
    records: dict[str, list[RequestAcceptance]] = {}
    notes: list[str] = []
    for name, measured in runs.items():
        found = [r for m in measured for r in (m.requests_acceptance or ())]
        if found:
            records[name] = found
            notes += uncovered(name, measured)
        elif any(m.spec is not None and m.spec.drafts > 0 for m in measured):
            notes.append(NO_PER_REQUEST.format(name=name))
    return matrix(records), notes
