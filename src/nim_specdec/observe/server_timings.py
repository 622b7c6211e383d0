"""What the server itself timed for a run: means from vLLM's latency histograms, between two scrapes.

A client on the same small machine as a CPU server gets CPU time only between the server's steps, so the
chunk times it records bunch together: time to first token reads close to the whole request and the gaps
between tokens read 0. The server stamps its own events, so the growth of each histogram's `_sum` over
the growth of its `_count` is the exact mean over the run's requests, however busy the client was.

    time per output token (TPOT) = (last token time - first token time) / (output tokens - 1), per request
    (vLLM's request_time_per_output_token), so a step that emits a whole accepted draft counts every token.
"""

from __future__ import annotations

import math
from typing import Mapping

from prometheus_client.parser import text_string_to_metric_families

TTFT = "vllm:time_to_first_token_seconds"
TPOT = "vllm:request_time_per_output_token_seconds"
E2E = "vllm:e2e_request_latency_seconds"
# report key -> histogram family
FAMILIES = {"ttft_mean_s": TTFT, "tpot_mean_s": TPOT, "latency_mean_s": E2E}


def histogram_totals(text: str) -> dict[str, tuple[float, float]]:
    """(sum, count) of each of FAMILIES' histograms in a /metrics scrape, summed over label sets."""
    wanted = set(FAMILIES.values())
    totals = {family: [0.0, 0.0] for family in wanted}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            for suffix, slot in (("_sum", 0), ("_count", 1)):
                name = sample.name[: -len(suffix)] if sample.name.endswith(suffix) else None
                if name in wanted and math.isfinite(float(sample.value)):
                    totals[name][slot] += float(sample.value)
    return {family: (pair[0], pair[1]) for family, pair in totals.items()}


def server_means(before: str, after: str) -> dict[str, float]:
    """Mean TTFT, TPOT and request latency (seconds) over the requests finished between two scrapes, and
    their count; a figure the server does not export, or that no request added to, is left out."""
    start, end = histogram_totals(before), histogram_totals(after)
    out: dict[str, float] = {}
    for key, family in FAMILIES.items():
        grown_sum = end[family][0] - start[family][0]
        grown_count = end[family][1] - start[family][1]
        if grown_count >= 1 and grown_sum >= 0:
            out[key] = grown_sum / grown_count
            if family == E2E:
                out["requests"] = grown_count
    return out


def client_busy_share(latency_mean_s: float | None, requests: int, duration_s: float, concurrency: int) -> float | None:
    """The share of the run's duration x concurrency the client spent inside requests; the rest the server
    sat idle waiting for the client's next request, and output tokens/s counts that idle time too."""
    if not latency_mean_s or requests < 1 or duration_s <= 0 or concurrency < 1:
        return None
    return min(1.0, latency_mean_s * requests / (duration_s * concurrency))


def means_from_json(data: Mapping[str, object] | None) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, value in (data or {}).items():
        if isinstance(value, (int, float)) and math.isfinite(value):
            out[str(key)] = float(value)
    return out
