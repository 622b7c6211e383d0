"""What the shell asks of an engine once it serves: where it answers ready and alive, where its metrics are, and how
its speculation counters are read into a report (`report`, the smoke check). An engine's package gives one Serving
value; the shell finds it by name, or by the counters a scrape holds (engines/registry.py), and imports no engine's
counters itself. The check of a report's figures is the same for every engine: they are printed in one set of
units."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from nim_specdec.errors import printable

Figures = dict[str, Any]  # model name -> the engine's parsed counters for it
Report = dict[str, dict]  # model name -> its reported figures


@dataclass(frozen=True)
class CounterReader:
    """An engine's speculation counters, read from its Prometheus text (all pure)."""

    holds: Callable[[str], bool]  # the scrape carries this engine's speculation metrics
    parse: Callable[[str], Figures]
    difference: Callable[[Figures, Figures], Figures]  # the growth since an earlier scrape
    problem: Callable[..., str | None]  # (figures, since=False): why they cannot be reported, or None
    report: Callable[[Figures], Report]
    render_text: Callable[[Report], str]
    parse_aiperf_export: Callable[[dict], Figures] | None = None  # AIPerf's export of this engine's metrics


@dataclass(frozen=True)
class Serving:
    name: str  # as the registry names the engine: "vllm"
    ready_path: str  # 200 once it answers requests
    live_path: str  # 200 while the process serves
    metrics_path: str  # its Prometheus text
    counters: CounterReader


# What each reported figure can be, whatever the engine (report prints every engine's in vLLM's units): a figure
# outside its range comes from counts that contradict each other (more accepted tokens than drafted, more verify
# steps than tokens emitted, a gauge of -3), which each look fine alone. (low, high, zero allowed below low)
FIGURE_RANGES: dict[str, tuple[float, float, bool]] = {
    "acceptance_rate": (0.0, 1.0, False),
    "acceptance_rate_gauge": (0.0, 1.0, False),
    "per_position_rate": (0.0, 1.0, False),
    "acceptance_length": (1.0, math.inf, False),
    "acceptance_length_gauge": (1.0, math.inf, True),  # SGLang's gauge reads 0 before its first interval
    "accepted_tokens": (0.0, math.inf, False),
    "draft_tokens_per_verify": (0.0, math.inf, False),
}


def result_problem(result: Report) -> str | None:
    """Why a report cannot be printed, or None: a figure that is not finite (a huge count divided by a tiny one)
    or outside what it can be (FIGURE_RANGES)."""
    for model, entry in result.items():
        label = f"model {printable(model[:80]) or '(unnamed)'}"
        for key, value in entry.items():
            values = value if isinstance(value, list) else [value]
            if any(isinstance(v, float) and not math.isfinite(v) for v in values):
                return f"{label}: {key} is not a finite number"
            if key not in FIGURE_RANGES:
                continue
            low, high, zero = FIGURE_RANGES[key]
            for v in values:
                if isinstance(v, (int, float)) and not (low <= v <= high or (zero and v == 0)):
                    wanted = f"in [{low:g}, {high:g}]" if math.isfinite(high) else f">= {low:g}"
                    return f"{label}: {key} is {v:g}, not {wanted}: the server's counts contradict each other"
    return None
