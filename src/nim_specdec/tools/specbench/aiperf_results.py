"""What one AIPerf run measured, read from its JSON exports (pure: dicts in, numbers out)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PROFILE_JSON = "profile_export_aiperf.json"
SERVER_METRICS_JSON = "server_metrics_export.json"

_SPEC = {
    "drafts": "vllm:spec_decode_num_drafts",
    "draft_tokens": "vllm:spec_decode_num_draft_tokens",
    "accepted": "vllm:spec_decode_num_accepted_tokens",
}
_PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos"


@dataclass(frozen=True)
class RunResult:
    output_tokens_per_s: float
    requests: int
    drafts: int = 0
    draft_tokens: int = 0
    accepted: int = 0
    accepted_per_pos: tuple[int, ...] = field(default=())

    @property
    def acceptance_rate(self) -> float | None:
        return self.accepted / self.draft_tokens if self.draft_tokens else None

    @property
    def acceptance_length(self) -> float | None:
        return 1.0 + self.accepted / self.drafts if self.drafts else None


def _metric_avg(profile: dict[str, Any], name: str) -> float:
    value = profile.get(name) or {}
    return float(value.get("avg") or 0.0) if isinstance(value, dict) else 0.0


def _growth(metrics: dict[str, Any], name: str) -> list[tuple[dict[str, str], float]]:
    entry = metrics.get(name) or {}
    out = []
    for series in entry.get("series") or []:
        stats = series.get("stats") or {}
        out.append((series.get("labels") or {}, float(stats.get("total") or 0.0)))
    return out


def parse_run(profile: dict[str, Any], server_metrics: dict[str, Any] | None) -> RunResult:
    """`profile`: profile_export_aiperf.json; `server_metrics`: server_metrics_export.json (or None)."""
    requests = int(_metric_avg(profile, "request_count"))
    tps = _metric_avg(profile, "output_token_throughput")
    if not server_metrics:
        return RunResult(tps, requests)
    metrics = server_metrics.get("metrics") or {}
    totals = {key: int(round(sum(v for _, v in _growth(metrics, name)))) for key, name in _SPEC.items()}
    positions: dict[int, float] = {}
    for labels, value in _growth(metrics, _PER_POS):
        if "position" in labels:
            pos = int(labels["position"])
            positions[pos] = positions.get(pos, 0.0) + value
    per_pos = tuple(int(round(positions.get(i, 0.0))) for i in range(max(positions) + 1)) if positions else ()
    return RunResult(tps, requests, accepted_per_pos=per_pos, **totals)
