"""tune.json from plain data: every measured configuration with its predicted and measured tokens/s and its
speedup over off (with interval and verdict) at each concurrency and on this traffic, the decision, and the
out-of-sample verification."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

OFF, STATIC, CHOICE_KIND = "off", "static", "model's choice"


@dataclass(frozen=True)
class ConfigRow:
    name: str  # "off", "ngram-k3", "model-choice"
    kind: str  # OFF, STATIC or CHOICE_KIND
    config: Mapping[str, Any] | None  # the speculative_config served (None: off)
    predicted: Mapping[int, float] = field(default_factory=dict)  # concurrency -> tokens/s
    measured: Mapping[int, float] = field(default_factory=dict)  # concurrency -> the median round's tokens/s
    vs_off: Mapping[int, Mapping[str, Any] | None] = field(default_factory=dict)  # stats.Speedup.to_json()
    on_traffic: Mapping[str, Any] | None = None  # the same, weighted by the capture's concurrency
    recommended: bool = False


def _by_c(values: Mapping[int, Any], digits: int | None = 2) -> dict[str, Any]:
    return {str(c): (round(v, digits) if digits is not None else v) for c, v in sorted(values.items())}


def build_result(
    *,
    recommended_env: Mapping[str, str],
    chosen: Mapping[str, Any] | None,
    decision: Mapping[str, Any],
    rows: Sequence[ConfigRow],
    concurrencies: Sequence[int],
    verification: Sequence[Mapping[str, Any]],
    cost_model: Mapping[str, Any],
    acceptance: Mapping[str, Any],
    methods: Sequence[Mapping[str, Any]],
    servers: Sequence[Mapping[str, Any]],
    lineup: Sequence[str],
    runs: Sequence[Mapping[str, Any]],
    notes: Sequence[str],
    duration_s: float,
    rounds: int = 1,
    repeat: int = 1,
    engine: Mapping[str, Any] | None = None,
    answer: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "recommended": dict(recommended_env),
        "engine": None if engine is None else dict(engine),
        "recommendation": chosen,
        "decision": dict(decision),
        "answer": None if answer is None else dict(answer),
        "concurrencies": list(concurrencies),
        "configurations": [
            {
                "name": r.name,
                "kind": r.kind,
                "recommended": r.recommended,
                "speculative_config": None if r.config is None else dict(r.config),
                "predicted_tokens_per_s": _by_c(r.predicted),
                "measured_tokens_per_s": _by_c(r.measured),
                "vs_off": _by_c(r.vs_off, None),
                "vs_off_on_traffic": None if r.on_traffic is None else dict(r.on_traffic),
            }
            for r in rows
        ],
        "verification": [dict(v) for v in verification],
        "cost_model": dict(cost_model),
        "acceptance": dict(acceptance),
        "methods": list(methods),
        "servers": list(servers),
        "rounds": rounds,
        "repeat": repeat,
        "lineup": list(lineup),
        "runs": list(runs),
        "notes": list(notes),
        "duration_s": round(duration_s, 1),
    }
