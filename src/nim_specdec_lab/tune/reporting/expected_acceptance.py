"""What live acceptance should be, from what tune measured: tune.json's `expected_acceptance` (pure: its JSON in).

Each run of a speculating configuration replays the captured traffic once and records the server's spec-decode
counters' growth, so it gives one acceptance length, 1 + accepted / drafts, over as much traffic as the capture
holds. Per configuration (a method at a K): their mean, and a 95% Student t prediction interval for one more
such run,

    mean +- t(0.975, n - 1) * sd * sqrt(1 + 1 / n)

which is where a window of live traffic of the capture's kind should land (not the narrower interval of the
mean: a live window is one draw, not the average of many). Its lower bound is what `nim-specdec alert-rules`
alerts under. Acceptance is a property of the text and the draft, not of the machine's speed, so every run
counts, at every concurrency and in every round; with fewer than two runs there is no interval.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from nim_specdec_lab.stats import t975

INTERVAL = (
    "95% Student t prediction interval of one run's acceptance length (1 + accepted / drafts over one replay "
    "of the captured traffic), over every run of the configuration"
)


def _length(spec: Any) -> float | None:
    if not isinstance(spec, Mapping):
        return None
    drafts, accepted = spec.get("drafts"), spec.get("accepted")
    if not isinstance(drafts, (int, float)) or not isinstance(accepted, (int, float)) or drafts <= 0:
        return None
    value = 1.0 + accepted / drafts
    return value if math.isfinite(value) else None


def interval(values: list[float]) -> tuple[float, float, float | None, float | None]:
    """(mean, sd, low, high) of a prediction interval for one more value; low/high None below two values."""
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, 0.0, None, None
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = t975(n - 1) * sd * math.sqrt(1 + 1 / n)
    return mean, sd, mean - half, mean + half


def expected_acceptance(result: Mapping[str, Any]) -> dict[str, Any]:
    """tune.json's `expected_acceptance`, from its own `configurations` and `runs`."""
    configs = {c["name"]: c.get("speculative_config") for c in result.get("configurations") or []}
    lengths: dict[str, list[float]] = {}
    for run in result.get("runs") or []:
        name = run.get("configuration")
        value = _length(run.get("spec"))
        if configs.get(name) and value is not None:
            lengths.setdefault(name, []).append(value)
    rows = []
    for name, values in lengths.items():
        config = configs[name]
        mean, sd, low, high = interval(values)
        rows.append(
            {
                "configuration": name,
                "method": config.get("method"),
                "k": config.get("num_speculative_tokens"),
                "k_by_batch_size": config.get("num_speculative_tokens_per_batch_size"),
                "runs": len(values),
                "acceptance_length_mean": round(mean, 4),
                "acceptance_length_sd": round(sd, 4),
                "acceptance_length_interval": None if low is None else [round(low, 4), round(high, 4)],
            }
        )
    decision = result.get("decision") or {}
    return {
        "recommended": decision.get("recommended"),
        "interval": INTERVAL,
        "by_configuration": sorted(rows, key=lambda r: (str(r["method"]), r["k"] or 0, r["configuration"])),
    }
