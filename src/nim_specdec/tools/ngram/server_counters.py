"""Speculative-decoding counters from a vLLM Prometheus /metrics page (pure parsing)."""

from __future__ import annotations

import re

COUNTERS = {
    "drafts": "vllm:spec_decode_num_drafts_total",
    "draft_tokens": "vllm:spec_decode_num_draft_tokens_total",
    "accepted": "vllm:spec_decode_num_accepted_tokens_total",
}
PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos_total"

_SAMPLE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(\{[^}]*\})?\s+(\S+)")
_POSITION = re.compile(r'position="(\d+)"')


def spec_counters(text: str) -> dict[str, float]:
    """Totals of the three counters over all label sets, plus "pos<i>" per draft position.

    Absent counters read as 0 (a server without speculation, or before its first draft).
    """
    totals = {name: 0.0 for name in COUNTERS}
    by_metric = {metric: name for name, metric in COUNTERS.items()}
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if not match:
            continue
        metric, labels, value = match.groups()
        if metric in by_metric:
            totals[by_metric[metric]] += float(value)
        elif metric == PER_POS and labels:
            pos = _POSITION.search(labels)
            if pos:
                key = f"pos{pos.group(1)}"
                totals[key] = totals.get(key, 0.0) + float(value)
    return totals


def delta(before: dict[str, float], after: dict[str, float]) -> dict[str, int]:
    return {key: int(round(after.get(key, 0.0) - before.get(key, 0.0))) for key in after}
