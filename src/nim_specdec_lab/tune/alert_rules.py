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
import re
from dataclasses import dataclass
from typing import Any, Mapping

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


def pick(expected: Mapping[str, Any], configuration: str | None) -> Expected | str:
    """The configuration to alert for (tune's recommendation unless named), or why there is none."""
    name = configuration or expected.get("recommended")
    rows = {r["configuration"]: r for r in expected.get("by_configuration") or []}
    if not name or name == "off":
        return "tune recommends speculation off: there is no acceptance to alert on"
    if name not in rows:
        known = ", ".join(sorted(rows)) or "none"
        return f"tune measured no acceptance for configuration {name!r} (measured: {known})"
    row = rows[name]
    bounds = row.get("acceptance_length_interval") or (None, None)
    return Expected(
        name, str(row["method"]), row.get("k"), int(row["runs"]), float(row["acceptance_length_mean"]), *bounds
    )


def selector(model_name: str) -> str:
    # A JSON string is a valid PromQL string: both escape \ and " alike, and \uXXXX is PromQL's too.
    return "{model_name=" + json.dumps(model_name) + "}"


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
    sel = selector(model_name)
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
