"""Speculative-decoding counters: read from Prometheus text or an AIPerf export, and the figures they give.

Pure functions over strings and plain data. Counters are summed over engines and kept per model name.

    acceptance rate (AR)   = accepted tokens / draft tokens
    acceptance length (AL) = 1 + accepted tokens / drafts      (mean tokens emitted per step)
    per-position rate[i]   = accepted at position i / drafts
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from nim_specdec.engines.protocol.serving import CounterReader, Serving
from nim_specdec.errors import printable

DRAFTS = "vllm:spec_decode_num_drafts"
DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens"
ACCEPTED = "vllm:spec_decode_num_accepted_tokens"
PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos"
_FIELDS = {DRAFTS: "drafts", DRAFT_TOKENS: "draft_tokens", ACCEPTED: "accepted"}
INACTIVE = "speculative decoding inactive"
# Far above any num_speculative_tokens; a larger position label would make the report allocate without bound.
MAX_POSITIONS = 1024


@dataclass(frozen=True)
class SpecCounters:
    drafts: float = 0.0
    draft_tokens: float = 0.0
    accepted: float = 0.0
    per_position: tuple[float, ...] = field(default_factory=tuple)

    @property
    def active(self) -> bool:
        return self.drafts > 0 and self.draft_tokens > 0

    def _combine(self, other: "SpecCounters", sign: float) -> "SpecCounters":
        width = max(len(self.per_position), len(other.per_position))
        mine = self.per_position + (0.0,) * (width - len(self.per_position))
        theirs = other.per_position + (0.0,) * (width - len(other.per_position))
        return SpecCounters(
            drafts=self.drafts + sign * other.drafts,
            draft_tokens=self.draft_tokens + sign * other.draft_tokens,
            accepted=self.accepted + sign * other.accepted,
            per_position=tuple(a + sign * b for a, b in zip(mine, theirs)),
        )

    def minus(self, earlier: "SpecCounters") -> "SpecCounters":
        return self._combine(earlier, -1.0)

    def plus(self, other: "SpecCounters") -> "SpecCounters":
        return self._combine(other, 1.0)

    def counts(self) -> dict[str, int]:
        """drafts, draft_tokens, accepted and pos<i> as whole numbers (what a per-request check compares)."""
        out = {"drafts": round(self.drafts), "draft_tokens": round(self.draft_tokens), "accepted": round(self.accepted)}
        out.update({f"pos{i}": round(value) for i, value in enumerate(self.per_position)})
        return out


@dataclass
class _Builder:
    values: dict[str, float] = field(default_factory=dict)
    positions: dict[int, float] = field(default_factory=dict)

    def add(self, name: str, value: float) -> None:
        self.values[name] = self.values.get(name, 0.0) + value

    def add_position(self, position: int, value: float) -> None:
        self.positions[position] = self.positions.get(position, 0.0) + value

    def build(self) -> SpecCounters:
        width = max(self.positions, default=-1) + 1
        return SpecCounters(
            drafts=self.values.get("drafts", 0.0),
            draft_tokens=self.values.get("draft_tokens", 0.0),
            accepted=self.values.get("accepted", 0.0),
            per_position=tuple(self.positions.get(i, 0.0) for i in range(width)),
        )


def _accumulate(builders: dict[str, _Builder], family: str, labels: dict, value: float) -> None:
    model = str(labels.get("model_name", ""))
    if not math.isfinite(value):
        raise ValueError(f"{family} has the value {value}, not a count")
    if family == PER_POS:
        position = str(labels.get("position", ""))
        if position.isascii() and position.isdigit():
            if len(position) > 4 or int(position) >= MAX_POSITIONS:
                raise ValueError(f"{family} has position {position[:20]!r}, beyond {MAX_POSITIONS}")
            builders.setdefault(model, _Builder()).add_position(int(position), value)
    elif family in _FIELDS:
        builders.setdefault(model, _Builder()).add(_FIELDS[family], value)


def parse_prometheus(text: str) -> dict[str, SpecCounters]:
    """Spec-decode counters per model_name from a /metrics scrape (empty dict when there are none)."""
    from prometheus_client.parser import text_string_to_metric_families  # noqa: PLC0415 - +37 modules (~17 ms) on every parser build

    builders: dict[str, _Builder] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            # vLLM declares `# TYPE X_total counter`; other exporters declare `X` and emit `X_total`. Either
            # way only the `_total` sample is a count (`_created` holds a timestamp).
            if sample.name.endswith("_total"):
                _accumulate(builders, sample.name[: -len("_total")], sample.labels, float(sample.value))
    return {model: b.build() for model, b in builders.items()}


def summed(per_model: dict[str, SpecCounters]) -> SpecCounters:
    """Every model's counters added up (a server serves one model; absent counters read 0)."""
    total = SpecCounters()
    for counters in per_model.values():
        total = total.plus(counters)
    return total


def counter_totals(text: str, families: tuple[str, ...]) -> dict[str, float]:
    """Each named counter family (e.g. "vllm:generation_tokens") summed over all its label sets; absent reads 0."""
    from prometheus_client.parser import text_string_to_metric_families  # noqa: PLC0415 - +37 modules (~17 ms) on every parser build

    totals = {name: 0.0 for name in families}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            name = sample.name[: -len("_total")] if sample.name.endswith("_total") else None
            if name in totals:
                totals[name] += float(sample.value)
    return totals


def parse_aiperf_export(data: dict) -> dict[str, SpecCounters]:
    """Counter growth during an AIPerf run, from its server_metrics_export.json (already decoded)."""
    builders: dict[str, _Builder] = {}
    metrics = data.get("metrics") or {}
    for name, metric in metrics.items():
        family = name[: -len("_total")] if name.endswith("_total") else name
        if family not in _FIELDS and family != PER_POS:
            continue
        for series in (metric or {}).get("series") or []:
            stats = series.get("stats") or {}
            if "total" not in stats:
                continue
            _accumulate(builders, family, series.get("labels") or {}, float(stats["total"]))
    return {model: b.build() for model, b in builders.items()}


def difference(now: dict[str, SpecCounters], earlier: dict[str, SpecCounters]) -> dict[str, SpecCounters]:
    return {model: counters.minus(earlier.get(model, SpecCounters())) for model, counters in now.items()}


def _values(counters: SpecCounters) -> list[tuple[str, float]]:
    return [
        ("drafts", counters.drafts),
        ("draft tokens", counters.draft_tokens),
        ("accepted", counters.accepted),
        *((f"accepted at position {i}", v) for i, v in enumerate(counters.per_position)),
    ]


def counters_problem(per_model: dict[str, SpecCounters], since: bool = False) -> str | None:
    """Why these counters cannot be reported, or None: a count that is not finite (a sum that overflowed)
    or below zero (with `since`: a counter that went down, as after a server restart)."""
    for model, counters in sorted(per_model.items()):
        for name, value in _values(counters):
            label = f"model {printable(model[:80]) or '(unnamed)'}: {name}"
            if not math.isfinite(value):
                return f"{label} is {value}, not a finite count"
            if value < 0:
                went = "went down by" if since else "is"
                return f"{label} {went} {abs(value) if since else value:g}" + (
                    " since the saved scrape (the server restarted?)" if since else ", not a count"
                )
    return None


def figures(counters: SpecCounters) -> dict:
    """The report for one model: AR, AL, per-position rates; or the inactive status without any division."""
    base = {
        "drafts": counters.drafts,
        "draft_tokens": counters.draft_tokens,
        "accepted_tokens": counters.accepted,
        "accepted_per_position": list(counters.per_position),
    }
    if not counters.active:
        return {"status": INACTIVE, **base}
    return {
        "status": "active",
        **base,
        "acceptance_rate": counters.accepted / counters.draft_tokens,
        "acceptance_length": 1.0 + counters.accepted / counters.drafts,
        "per_position_rate": [value / counters.drafts for value in counters.per_position],
    }


def report(per_model: dict[str, SpecCounters]) -> dict[str, dict]:
    return {model: figures(counters) for model, counters in sorted(per_model.items())}


def render_text(result: dict[str, dict]) -> str:
    if not result or all(entry["status"] == INACTIVE and not entry["drafts"] for entry in result.values()):
        return INACTIVE + " (no drafts counted)\n"
    lines = []
    for model, entry in result.items():
        lines.append(f"model {printable(model) or '(unnamed)'}")
        if entry["status"] == INACTIVE:
            lines.append(f"  {INACTIVE} (drafts {entry['drafts']:g}, draft tokens {entry['draft_tokens']:g})")
            continue
        lines.append(f"  acceptance rate    {entry['acceptance_rate']:.4f}")
        lines.append(f"  acceptance length  {entry['acceptance_length']:.4f}")
        lines.append(f"  drafts             {entry['drafts']:g}")
        lines.append(f"  draft tokens       {entry['draft_tokens']:g}")
        lines.append(f"  accepted tokens    {entry['accepted_tokens']:g}")
        rates = " ".join(f"{i}:{rate:.4f}" for i, rate in enumerate(entry["per_position_rate"]))
        lines.append(f"  per position       {rates or '-'}")
    return "\n".join(lines) + "\n"


def holds_vllm(text: str) -> bool:
    return "vllm:" in text


COUNTERS = CounterReader(
    holds_vllm, parse_prometheus, difference, counters_problem, report, render_text, parse_aiperf_export
)
# The NIM endpoints the launcher's middleware adds to vLLM's server (server/endpoints.py).
SERVING = Serving(
    "vllm", ready_path="/v1/health/ready", live_path="/v1/health/live", metrics_path="/v1/metrics", counters=COUNTERS
)
