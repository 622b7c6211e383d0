"""Prometheus alerts for one served model from what tune measured (pure: tune.json's expected acceptance in,
rule groups out; `nim-specdec alert-rules` is the shell).

Three alerts on vLLM's counters, per `model_name` (the served name on the production pods):

    NimSpecDecodeAcceptanceBelowTuned  acceptance length over the window below the lower bound of tune's
                                       interval, for as long again, with at least `min_drafts` drafts in the
                                       window (traffic flows, and enough of it for the ratio to mean something)
    NimSpecDecodeDraftsStopped         tokens generated, not one draft counted in 10 minutes, for 10 more
    NimSpecDecodeConfiguredButOff      a target serving the model without vLLM's speculative counters (vLLM
                                       registers them only with a speculative config): tune's recommendation
                                       says it should speculate

The first is a ratio and cannot fire when drafts stop altogether (nothing to divide): the two others can.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import astuple, dataclass
from typing import Any, Mapping

from nim_specdec.config import variables as var
from nim_specdec.errors import ConfigError
from nim_specdec_lab.tune.reporting.expected_acceptance import expected_acceptance

RUNBOOK = "docs/alerts.md#"
DURATION = re.compile(r"^[1-9][0-9]{0,4}[smh]$")
GROUP = "nim-specdec-tuned"


@dataclass(frozen=True)
class Expected:
    configuration: str
    method: str
    k: int | None
    runs: int
    mean: float
    low: float | None
    high: float | None


def _number(row: Mapping[str, Any], key: str, value: Any = None) -> float:
    value = row.get(key) if value is None else value
    # bool is an int to Python: `true` would print as `True`, a PromQL metric name, and the alert never fire
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{key} is {value!r}, not a number")
    return float(value)


def _count(row: Mapping[str, Any], key: str, optional: bool = False) -> int | None:
    value = row.get(key)
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{key} is {value!r}, not a count")
    return value


def pick(expected: Mapping[str, Any], configuration: str | None) -> Expected | str:
    """The configuration to alert for (tune's recommendation unless named), or why there is none.

    tune.json is parsed here into what the rules print: numbers that are numbers (not booleans), a mean of at
    least 1 inside its interval (else the alert could never fire, or fire always), text as text."""
    name = configuration or expected.get("recommended")
    rows = {str(r["configuration"]): r for r in expected.get("by_configuration") or []}
    if not name or name == "off":
        return "tune recommends speculation off: there is no acceptance to alert on"
    if name not in rows:
        known = ", ".join(sorted(rows)) or "none"
        return f"tune measured no acceptance for configuration {name!r} (measured: {known})"
    row = rows[name]
    try:
        bounds = row.get("acceptance_length_interval")
        if bounds is not None and (not isinstance(bounds, list) or len(bounds) != 2):
            raise ValueError(f"acceptance_length_interval is {bounds!r}, not [low, high]")
        mean = _number(row, "acceptance_length_mean")
        low, high = (
            (None, None) if bounds is None else (_number(row, "low", bounds[0]), _number(row, "high", bounds[1]))
        )
        if mean < 1 or (low is not None and not low <= mean <= high):
            raise ValueError(
                f"acceptance length {mean:g} in [{low}, {high}] is not a mean of at least 1 inside its interval"
            )
        chosen = Expected(name, str(row["method"]), _count(row, "k", True), _count(row, "runs"), mean, low, high)
    except ValueError as err:  # the shell's one line: not a tune.json
        raise ValueError(f"configuration {name!r}: {err}") from None
    if low is not None and low < 1:
        return (
            f"{name}: the interval's lower bound {low:.3f} is below 1, the least acceptance length there is, so "
            f"the alert could never fire ({chosen.runs} runs are too few or too spread; run tune with more --rounds)"
        )
    return chosen


def selector(model_name: str) -> str:
    # A JSON string is a valid PromQL string: both escape \ and " alike, and \uXXXX is PromQL's too.
    return "{model_name=" + json.dumps(model_name) + "}"


def literal(text: str) -> str:
    """`text` as Prometheus prints it in a label or annotation, which are Go templates: a `{{` or `}}` in a model
    or configuration name (tune.json is a file anyone could have edited) is printed, never run, and never makes
    Prometheus refuse the whole rule file."""
    return re.sub(r"\{\{|\}\}", lambda m: '{{"' + m.group() + '"}}', text)


def _alert(name: str, expr: str, hold: str, labels: Mapping[str, str], summary: str, description: str) -> dict:
    return {
        "alert": name,
        "expr": expr,
        "for": hold,
        "labels": {"severity": "warning", "engine": "vllm", **labels},
        "annotations": {"summary": summary, "description": description, "runbook": RUNBOOK + name.lower()},
    }


def alert_group(model_name: str, expected: Expected, window: str = "15m", min_drafts: int = 200) -> dict:
    """One rule group of the three alerts; `expected.low` must be known (two runs or more)."""
    if expected.low is None:
        raise ValueError("no interval: fewer than two runs")
    sel = selector(model_name)  # PromQL, not a template: the name as it is, quoted
    model_name = literal(model_name)
    expected = Expected(literal(expected.configuration), literal(expected.method), *astuple(expected)[2:])
    drafts = f"vllm:spec_decode_num_drafts_total{sel}"
    tokens = f"vllm:generation_tokens_total{sel}"
    tuned = {"tuned_configuration": expected.configuration}
    measured = (
        f"tune measured {expected.configuration} ({expected.method}, K={expected.k}): mean acceptance length "
        f"{expected.mean:.3f}, interval [{expected.low:.3f}, {expected.high:.3f}] over {expected.runs} runs"
    )
    accepted = (
        f"(\n  1 + sum by (model_name) (rate(vllm:spec_decode_num_accepted_tokens_total{sel}[{window}]))\n"
        f"    / sum by (model_name) (rate({drafts}[{window}]))\n) < {expected.low!r}\n"
        f"  and on (model_name)\nsum by (model_name) (increase({drafts}[{window}])) >= {min_drafts}\n"
    )
    stopped = (
        f"(sum by (model_name) (increase({tokens}[10m])) > 0)\n  and on (model_name)\n"
        f"(sum by (model_name) (increase({drafts}[10m])) == 0)\n"
    )
    off = (
        f"group by (model_name, instance) (increase({tokens}[10m]) > 0)\n  unless on (model_name, instance)\n"
        f"group by (model_name, instance) ({drafts})\n"
    )
    return {
        "name": GROUP,
        "interval": "30s",
        "rules": [
            _alert(
                "NimSpecDecodeAcceptanceBelowTuned",
                accepted,
                window,
                tuned,
                f"{model_name}: acceptance length below {expected.low:.3f}, the lower bound tune measured",
                f"Over {window} with at least {min_drafts} drafts, live acceptance is below what tune measured on "
                f"the captured traffic: {measured}. The traffic changed, or the draft or target did.",
            ),
            _alert(
                "NimSpecDecodeDraftsStopped",
                stopped,
                "10m",
                tuned,
                f"{model_name}: speculative decoding drafts nothing while requests are served",
                f"Tokens are generated but vLLM's draft counter has not moved for 20 minutes ({measured}).",
            ),
            _alert(
                "NimSpecDecodeConfiguredButOff",
                off,
                "10m",
                tuned,
                f"{model_name} on {{{{ $labels.instance }}}}: served without speculative decoding",
                f"{{{{ $labels.instance }}}} serves {model_name} without vLLM's speculative counters, though tune "
                f"recommends {expected.configuration}: a rollout turned speculation off.",
            ),
        ],
    }


def dns_name(text: str) -> str:
    """A Kubernetes object name (DNS-1123, 63 characters) from a model name."""
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return (f"{GROUP}-{slug}" if slug else GROUP)[:63].rstrip("-")


def rules_file(group: dict) -> dict:
    return {"groups": [group]}


def prometheus_rule(group: dict, model_name: str, namespace: str) -> dict:
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {
            "name": dns_name(model_name),
            "namespace": namespace,
            "labels": {"app.kubernetes.io/name": "nim-specdec", "app.kubernetes.io/component": "alerts"},
        },
        "spec": {"groups": [group]},
    }


def expected_for(result: Mapping[str, Any], configuration: str | None) -> Expected:
    """What a tune.json expects of `configuration` (None: the recommendation), or one line saying why it has no
    figure to alert on: speculation off recommended, a configuration it did not measure, too few runs."""
    table = result.get("expected_acceptance")
    if not isinstance(table, dict):  # a tune.json from before tune wrote it: the same figures from its runs
        table = expected_acceptance(result)
    chosen = pick(table, configuration)
    if isinstance(chosen, str):
        raise ConfigError(
            "--configuration" if configuration else "TUNE_JSON",
            chosen,
            f"name a measured configuration with --configuration, or serve with {var.SPECDEC_ENABLE}=0",
        )
    if chosen.low is None:
        raise ConfigError(
            "TUNE_JSON",
            f"{chosen.configuration} was measured in {chosen.runs} run, too few for an interval",
            "run tune with --rounds 2 or more",
        )
    return chosen
