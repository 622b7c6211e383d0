"""SGLang's speculative-decoding metrics, read from its /metrics text into the units vLLM's give (pure).

NIM for LLMs drives the same NIM_SPECDEC_* variables through SGLang too, which exports speculation under
other names and types (SGLang's python/sglang/srt/observability/metrics_collector.py):

    sglang:spec_verify_calls_total   counter: verify steps, summed over finished requests (one per draft)
    sglang:generation_tokens_total   counter: output tokens of finished requests
    sglang:num_requests_total        counter: finished requests
    sglang:spec_accept_length        gauge: mean accepted drafts + bonus token per verify, last logging interval
    sglang:spec_accept_rate          gauge: accepted drafts / proposed drafts, last logging interval
    sglang:spec_num_draft_tokens     gauge: the active speculative_num_draft_tokens (drafted per verify step)

A request's first token comes from its prefill, every later one from a verify step that emits the accepted
drafts plus one, so over any interval

    acceptance length = (generation tokens - requests) / verify calls      (vLLM's 1 + accepted / drafts)
    accepted tokens   = generation tokens - requests - verify calls

both from counters, hence exact over `--since` and over a Prometheus window. SGLang counts no draft tokens,
so the acceptance rate is its own gauge (the last interval it logged), reported as such.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from nim_specdec.engines.protocol.serving import CounterReader, Serving
from nim_specdec.errors import printable

VERIFY_CALLS = "sglang:spec_verify_calls"
GENERATION_TOKENS = "sglang:generation_tokens"
REQUESTS = "sglang:num_requests"
ACCEPT_LENGTH = "sglang:spec_accept_length"
ACCEPT_RATE = "sglang:spec_accept_rate"
DRAFT_TOKENS = "sglang:spec_num_draft_tokens"
_COUNTERS = {VERIFY_CALLS: "verify_calls", GENERATION_TOKENS: "generation_tokens", REQUESTS: "requests"}
_GAUGES = {ACCEPT_LENGTH: "accept_length", ACCEPT_RATE: "accept_rate", DRAFT_TOKENS: "draft_tokens_per_verify"}
# The names that say a scrape is SGLang's speculation (any one of them).
SPEC_FAMILIES = (VERIFY_CALLS, ACCEPT_LENGTH, ACCEPT_RATE, DRAFT_TOKENS)
ENGINE = "sglang"


@dataclass(frozen=True)
class SglangSpec:
    verify_calls: float = 0.0
    generation_tokens: float = 0.0
    requests: float = 0.0
    gauges: dict[str, float] = field(default_factory=dict)  # accept_length, accept_rate, draft_tokens_per_verify

    def minus(self, earlier: "SglangSpec") -> "SglangSpec":
        """Counters as growth since `earlier`; gauges as they are now (they hold the last interval already)."""
        return SglangSpec(
            self.verify_calls - earlier.verify_calls,
            self.generation_tokens - earlier.generation_tokens,
            self.requests - earlier.requests,
            dict(self.gauges),
        )


def is_sglang(text: str) -> bool:
    """Whether a scrape holds SGLang's speculative metrics (detected by name, before any parsing)."""
    return any(name in text for name in SPEC_FAMILIES)


def parse_sglang(text: str) -> dict[str, SglangSpec]:
    """SGLang's speculative figures per model_name: counters summed over label sets, gauges averaged (one
    series per tensor-parallel rank holds the same interval's figure)."""
    from prometheus_client.parser import text_string_to_metric_families  # noqa: PLC0415 - +37 modules (~17 ms) on every parser build

    counters: dict[str, dict[str, float]] = {}
    gauges: dict[str, dict[str, list[float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            model = str(sample.labels.get("model_name", ""))
            value = float(sample.value)
            if sample.name.endswith("_total") and sample.name[: -len("_total")] in _COUNTERS:
                if not math.isfinite(value):
                    raise ValueError(f"{sample.name} has the value {value}, not a count")
                key = _COUNTERS[sample.name[: -len("_total")]]
                per_model = counters.setdefault(model, {})
                per_model[key] = per_model.get(key, 0.0) + value
            elif sample.name in _GAUGES and math.isfinite(value):
                gauges.setdefault(model, {}).setdefault(_GAUGES[sample.name], []).append(value)
    out = {}
    for model in sorted(set(counters) | set(gauges)):
        found = counters.get(model, {})
        means = {key: sum(values) / len(values) for key, values in gauges.get(model, {}).items()}
        if "verify_calls" in found or means:
            out[model] = SglangSpec(
                found.get("verify_calls", 0.0), found.get("generation_tokens", 0.0), found.get("requests", 0.0), means
            )
    return out


def difference(now: dict[str, SglangSpec], earlier: dict[str, SglangSpec]) -> dict[str, SglangSpec]:
    return {model: spec.minus(earlier.get(model, SglangSpec())) for model, spec in now.items()}


def counters_problem(per_model: dict[str, SglangSpec], since: bool = False) -> str | None:
    """Why these figures cannot be reported, or None (a count below zero: with `since`, a restart)."""
    for model, spec in sorted(per_model.items()):
        for name, value in (
            ("verify calls", spec.verify_calls),
            ("generation tokens", spec.generation_tokens),
            ("requests", spec.requests),
        ):
            if value < 0:
                label = f"model {printable(model[:80]) or '(unnamed)'}: {name}"
                if since:
                    return f"{label} went down by {-value:g} since the saved scrape (the server restarted?)"
                return f"{label} is {value:g}, not a count"
    return None


def figures(spec: SglangSpec) -> dict:
    """One model's report in vLLM's units: drafts (verify calls), accepted tokens, acceptance length and rate."""
    steps = spec.generation_tokens - spec.requests
    base = {
        "engine": ENGINE,
        "drafts": spec.verify_calls,
        "generation_tokens": spec.generation_tokens,
        "requests": spec.requests,
        "acceptance_rate_gauge": spec.gauges.get("accept_rate"),
        "acceptance_length_gauge": spec.gauges.get("accept_length"),
        "draft_tokens_per_verify": spec.gauges.get("draft_tokens_per_verify"),
    }
    if spec.verify_calls <= 0 or steps <= 0:
        return {"status": "speculative decoding inactive", **base}
    return {
        "status": "active",
        **base,
        "accepted_tokens": steps - spec.verify_calls,
        "acceptance_length": steps / spec.verify_calls,
        "acceptance_rate": spec.gauges.get("accept_rate"),
    }


def report(per_model: dict[str, SglangSpec]) -> dict[str, dict]:
    return {model: figures(spec) for model, spec in sorted(per_model.items())}


def _gauge(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def render_text(result: dict[str, dict]) -> str:
    lines = []
    for model, entry in result.items():
        lines.append(f"model {printable(model) or '(unnamed)'} (SGLang)")
        if entry["status"] != "active":
            lines.append(f"  {entry['status']} (verify calls {entry['drafts']:g})")
        else:
            length, rate = entry["acceptance_length"], _gauge(entry["acceptance_rate"])
            lines.append(f"  acceptance length  {length:.4f}   (generation tokens - requests) / verify calls")
            lines.append(f"  acceptance rate    {rate}   SGLang's gauge, its last logging interval")
            lines.append(f"  drafts             {entry['drafts']:g}   verify calls")
            lines.append(f"  accepted tokens    {entry['accepted_tokens']:g}")
        lines.append(f"  draft tokens/verify {_gauge(entry['draft_tokens_per_verify'], 0)}")
        lines.append(f"  acceptance length (gauge) {_gauge(entry['acceptance_length_gauge'])}")
    return "\n".join(lines) + "\n" if lines else "speculative decoding inactive (no SGLang speculative metrics)\n"


COUNTERS = CounterReader(is_sglang, parse_sglang, difference, counters_problem, report, render_text)
# SGLang's own endpoints (python/sglang/srt/entrypoints/http_server.py): /health_generate answers 200 once a
# one-token generation went through (recent releases route /health to the same check), /metrics with
# --enable-metrics.
SERVING = Serving(
    "sglang", ready_path="/health_generate", live_path="/health", metrics_path="/metrics", counters=COUNTERS
)
