"""From AIPerf's summary export and two /metrics scrapes to a ReplayMeasurement (pure: dicts and text in)."""

from __future__ import annotations

import math
from typing import Any, Mapping

from nim_specdec.engines.vllm.observe.spec_counters import SpecCounters, counter_totals, parse_prometheus, summed
from nim_specdec.observe.server_timings import client_busy_share, server_means
from nim_specdec_lab.replay.spec import ReplayMeasurement, ReplaySpec, sampling, sent_count

PROFILE_JSON = "profile_export_aiperf.json"
GENERATION_TOKENS = "vllm:generation_tokens"
REQUEST_SUCCESS = "vllm:request_success"
MS = 1e-3
PERCENTILES = ("p50", "p90", "p99")


def _avg(profile: Mapping[str, Any], name: str) -> float | None:
    value = profile.get(name)
    if isinstance(value, Mapping):
        value = value.get("avg")
    return float(value) if isinstance(value, (int, float)) else None


def spec_growth(before: str, after: str) -> SpecCounters | None:
    """The spec-decode counters' growth between two scrapes, summed over models; None on a server without them."""
    now = parse_prometheus(after)
    return summed(now).minus(summed(parse_prometheus(before))) if now else None


def counter_growth(before: str, after: str, family: str) -> float:
    return counter_totals(after, (family,))[family] - counter_totals(before, (family,))[family]


def spec_config_from_metrics(text: str) -> dict[str, Any]:
    """What /metrics alone says about the server's speculation: its draft length, or that it has none."""
    counters = parse_prometheus(text)
    if not counters:
        return {"speculative_config": None, "source": "/metrics (no spec-decode counters: speculation off)"}
    width = max(len(c.per_position) for c in counters.values())
    return {
        "speculative_config": {"num_speculative_tokens": width} if width else {},
        "source": "/metrics (draft positions)",
    }


def measurement(
    spec: ReplaySpec, profile: Mapping[str, Any], before: str, after: str, server_config: Mapping[str, Any] | None
) -> ReplayMeasurement:
    """`profile`: AIPerf's profile_export_aiperf.json; `before`/`after`: /metrics text around the run."""
    ok = int(_avg(profile, "request_count") or 0)
    errors = int(_avg(profile, "error_request_count") or 0)
    duration = _avg(profile, "benchmark_duration") or 0.0
    # Output tokens as the server counted them: the usage blocks AIPerf read (--use-server-token-count),
    # else the server's own generation counter.
    usage_tokens = _avg(profile, "total_output_tokens")
    latency_ms = _avg(profile, "request_latency")
    output_tokens = (
        int(round(usage_tokens)) if usage_tokens else int(round(counter_growth(before, after, GENERATION_TOKENS)))
    )
    return ReplayMeasurement(
        request_count=max(sent_count(spec), ok + errors),
        ok_count=ok,
        concurrency=spec.concurrency,
        schedule=spec.schedule,
        duration_s=duration,
        output_tokens=output_tokens,
        output_tokens_per_s=output_tokens / duration if duration > 0 else 0.0,
        latency_s=percentiles(profile.get("request_latency"), MS),
        ttft_s=percentiles(profile.get("time_to_first_token"), MS),
        itl_s=percentiles(profile.get("inter_token_latency"), MS),
        spec=spec_growth(before, after),
        server_spec_config=server_config,
        server_means=server_means(before, after),
        client_busy_share=client_busy_share(latency_ms * MS if latency_ms else None, ok, duration, spec.concurrency),
        sampling=sampling(spec),
    )


def percentiles(metric: Mapping[str, Any] | None, scale: float) -> dict[str, float]:
    """p50/p90/p99 of one AIPerf metric, times `scale` (AIPerf reports latencies in ms)."""
    out = {}
    for key in PERCENTILES:
        value = (metric or {}).get(key)
        if isinstance(value, (int, float)) and math.isfinite(value):
            out[key] = float(value) * scale
    return out
