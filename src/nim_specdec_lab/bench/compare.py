"""The on/off comparison behind report.json: per category both measurements, acceptance, speedup and
how it was computed, and the warnings a reader needs (pure: measurements in, plain data out)."""

from __future__ import annotations

from typing import Any, Mapping

from nim_specdec.engines.vllm.observe.spec_counters import figures
from nim_specdec_lab.replay.spec import ReplayMeasurement

MODES = ("off", "on")
THROUGHPUT = (
    "output tokens/s = output tokens the server reported (usage of each streamed response) / AIPerf's "
    "benchmark duration (first request sent to last response received)"
)
SPEEDUP = "speedup = output tokens/s with speculation on / output tokens/s with it off, same requests and schedule"
SERVER_TIMES = (
    "server means: time to first token, time per output token and request latency as the server timed them "
    "(its histograms' growth during the run), unaffected by how promptly the client read the stream"
)
# Below this, the client's turnaround between requests is a visible part of what tokens/s measures.
BUSY_WARNING = 0.8
ARRIVAL_RATE = (
    "replayed at the captured arrival times: output tokens/s mostly measures how fast the requests arrived, "
    "not how fast the server is; compare the latencies, or run the default closed loop (--schedule closed)"
)


def _side(m: ReplayMeasurement | None) -> dict[str, Any] | None:
    if m is None:
        return None
    side = m.to_json()
    side.pop("requests_acceptance", None)  # each response's: in measurement.json; the report has the matrix
    side["acceptance"] = figures(m.spec) if m.spec is not None else None
    return side


def _comparable(off: ReplayMeasurement, on: ReplayMeasurement) -> str | None:
    """Why the two runs cannot be compared, or None."""
    for name in ("schedule", "concurrency", "request_count"):
        if getattr(off, name) != getattr(on, name):
            return (
                f"off and on ran with different {name.replace('_', ' ')} ({getattr(off, name)} vs {getattr(on, name)})"
            )
    # Runs written before the sampling was recorded carry none: nothing to compare there.
    if off.sampling and on.sampling and dict(off.sampling) != dict(on.sampling):
        return f"off and on ran with different sampling ({dict(off.sampling)} vs {dict(on.sampling)})"
    return None


def _warnings(
    category: str,
    off: ReplayMeasurement | None,
    on: ReplayMeasurement | None,
    labels: Mapping[str, str],
    baseline_off: bool,
) -> list[str]:
    out = []
    for mode, m in (("off", off), ("on", on)):
        if m is None:
            out.append(f"{category}: no '{labels[mode]}' run yet (run bench --mode {mode})")
            continue
        if m.ok_count < m.request_count:
            failed = m.request_count - m.ok_count
            out.append(f"{category} {labels[mode]}: {failed} of {m.request_count} requests failed")
    for mode, m in (("off", off), ("on", on)):
        if (
            m is not None
            and m.schedule == "closed"
            and m.client_busy_share is not None
            and m.client_busy_share < BUSY_WARNING
        ):
            out.append(
                f"{category} {labels[mode]}: requests were in flight for {m.client_busy_share:.0%} of the run "
                "x concurrency; "
                "the rest is the client's turnaround between requests, which output tokens/s includes "
                "(raise --concurrency, or run the client on another machine)"
            )
    if baseline_off and off is not None and off.spec is not None and off.spec.drafts > 0:
        out.append(f"{category}: the '{labels['off']}' server drafted {off.spec.drafts:g} times: it runs speculation")
    if on is not None and (on.spec is None or on.spec.drafts == 0):
        out.append(f"{category}: the '{labels['on']}' server made no drafts: speculation was not active")
    return out


LABELS = {"off": "off", "on": "on"}


def compare(
    found: Mapping[str, Mapping[str, ReplayMeasurement]], labels: Mapping[str, str] = LABELS, baseline_off: bool = True
) -> dict[str, Any]:
    """`found[mode][category]`: the measurements; returns report.json's content. `labels`: what the two
    sides are called (bench --serve: baseline and candidate); `baseline_off`: the 'off' side must not draft."""
    categories = sorted(set().union(*(found.get(mode, {}) for mode in MODES)))
    rows, warnings = [], []
    for category in categories:
        off, on = found.get("off", {}).get(category), found.get("on", {}).get(category)
        row: dict[str, Any] = {
            "category": category,
            "off": _side(off),
            "on": _side(on),
            "speedup": None,
            "latency_p50_ratio": None,
            "tpot_ratio": None,
            "speedup_note": None,
        }
        if off is not None and on is not None:
            why = _comparable(off, on)
            if why:
                row["speedup_note"] = why
            elif off.output_tokens_per_s > 0:
                row["speedup"] = on.output_tokens_per_s / off.output_tokens_per_s
                if on.schedule == "timestamps":
                    row["speedup_note"] = ARRIVAL_RATE
            if not why and off.latency_s.get("p50") and on.latency_s.get("p50"):
                row["latency_p50_ratio"] = off.latency_s["p50"] / on.latency_s["p50"]
            if not why and off.server_means.get("tpot_mean_s") and on.server_means.get("tpot_mean_s"):
                row["tpot_ratio"] = off.server_means["tpot_mean_s"] / on.server_means["tpot_mean_s"]
        rows.append(row)
        warnings += _warnings(category, off, on, labels, baseline_off)
    return {
        "how": {
            "throughput": THROUGHPUT,
            "speedup": SPEEDUP,
            "latency_p50_ratio": "request latency p50 off / on (above 1: requests finish sooner with speculation)",
            "tpot_ratio": "the server's mean time per output token off / on (above 1: tokens come faster with speculation)",  # noqa: E501
            "server_means": SERVER_TIMES,
        },
        "labels": dict(labels),
        "rows": rows,
        "warnings": warnings,
    }
