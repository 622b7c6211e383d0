"""Turn two real /metrics scrapes and the figures `nim-specdec report` gives for them into a
`promtool test rules` file: the scrapes become input series 5 minutes apart, and each figure
becomes a check that the recording rule's value at the second scrape equals it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml
from prometheus_client.parser import text_string_to_metric_families

WINDOW = "5m"
TOLERANCE = 1e-9
NAME = re.compile(r"\b[a-z_]+:[A-Za-z0-9_:]+")


def metric_names(expression: str) -> set[str]:
    """Names in an expression. Every vLLM metric and every recording rule has a colon in its
    name, and no PromQL function, keyword or label does, so this finds all of them."""
    without_strings = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expression)
    return set(NAME.findall(without_strings))


def samples(text: str) -> dict[str, float]:
    """Series text (name{labels}) -> value, for every sample in a scrape."""
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = ",".join(f"{k}={json.dumps(v)}" for k, v in sorted(sample.labels.items()))
            out[f"{sample.name}{{{labels}}}"] = float(sample.value)
    return out


def _series_name(series: str) -> str:
    return series.split("{", 1)[0]


def input_series(first: str, second: str, names: set[str]) -> list[dict]:
    before, after = samples(first), samples(second)
    return [
        {"series": series, "values": f"{before.get(series, 0.0)!r} {value!r}"}
        for series, value in sorted(after.items())
        if _series_name(series) in names
    ]


def _close_to(expr: str, expected: float, labels: dict[str, str]) -> dict:
    label_text = ",".join(f"{k}={json.dumps(v)}" for k, v in sorted(labels.items()))
    return {
        "expr": f"abs({expr} - {expected!r}) < bool {TOLERANCE}",
        "eval_time": WINDOW,
        "exp_samples": [{"labels": f"{{{label_text}}}", "value": 1}],
    }


def checks_from_report(report: dict[str, dict]) -> list[dict]:
    checks = []
    for model, entry in report.items():
        labels = {"model_name": model}
        selector = f"{{model_name={json.dumps(model)}}}"
        if entry["status"] != "active":
            for record in ("nim:spec_decode_acceptance_rate:ratio_rate5m", "nim:spec_decode_acceptance_length:rate5m"):
                checks.append({"expr": record + selector, "eval_time": WINDOW, "exp_samples": []})
            continue
        checks.append(
            _close_to("nim:spec_decode_acceptance_rate:ratio_rate5m" + selector, entry["acceptance_rate"], labels)
        )
        checks.append(
            _close_to("nim:spec_decode_acceptance_length:rate5m" + selector, entry["acceptance_length"], labels)
        )
        for position, rate in enumerate(entry["per_position_rate"]):
            pos_labels = {**labels, "position": str(position)}
            pos_selector = f'{{model_name={json.dumps(model)},position="{position}"}}'
            checks.append(
                _close_to("nim:spec_decode_position_acceptance_rate:ratio_rate5m" + pos_selector, rate, pos_labels)
            )
    return checks


def write_case(path: Path, rules: Path, first: str, second: str, report: dict[str, dict], names: set[str]) -> Path:
    case = {
        "rule_files": [str(rules)],
        "evaluation_interval": "30s",
        "tests": [
            {
                "interval": WINDOW,
                "input_series": input_series(first, second, names),
                "promql_expr_test": checks_from_report(report),
            }
        ],
    }
    path.write_text(yaml.safe_dump(case, sort_keys=False))
    return path
