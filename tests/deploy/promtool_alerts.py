"""`promtool test rules` for alerts: input series and the alerts expected at one moment, written as promtool's
test file, with each expected alert's annotations filled from its rule (promtool compares them too)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Mapping, Sequence

import yaml

_LABEL = re.compile(r"\{\{\s*\$labels\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def promtool() -> str:
    found = os.environ.get("PROMTOOL") or shutil.which("promtool")
    assert found, "promtool not found: run `make lint` once (it unpacks Debian's prometheus package) or set PROMTOOL"
    return found


def alert_rules(paths: Sequence[Path]) -> list[dict]:
    return [
        rule
        for path in paths
        for group in yaml.safe_load(path.read_text())["groups"]
        for rule in group["rules"]
        if "alert" in rule
    ]


def _rule_for(rules: list[dict], alertname: str, labels: Mapping[str, str]) -> dict:
    found = [
        r
        for r in rules
        if r["alert"] == alertname and all(labels.get(k) == v for k, v in (r.get("labels") or {}).items())
    ]
    assert len(found) == 1, f"{alertname} with {dict(labels)}: {len(found)} rules match"
    return found[0]


def expected(rules: list[dict], alertname: str, labels: Mapping[str, str]) -> dict:
    """One expected alert: its labels (the rule's and the expression's) and its annotations as Prometheus fills
    them (these rules' templates use `$labels` only)."""
    rule = _rule_for(rules, alertname, labels)
    annotations = {k: _LABEL.sub(lambda m: labels[m.group(1)], v) for k, v in (rule.get("annotations") or {}).items()}
    return {"exp_labels": dict(labels), "exp_annotations": annotations}


def run_case(
    workdir: Path,
    rule_files: Sequence[Path],
    series: Mapping[str, str],
    checks: Sequence[tuple[str, str, Sequence[Mapping[str, str]]]],
    interval: str = "1m",
) -> subprocess.CompletedProcess:
    """`checks`: (eval_time, alertname, the labels of each alert expected then; none = must not fire)."""
    rules = alert_rules(rule_files)
    case = {
        "rule_files": [str(p) for p in rule_files],
        "evaluation_interval": "30s",
        "tests": [
            {
                "interval": interval,
                "input_series": [{"series": s, "values": v} for s, v in series.items()],
                "alert_rule_test": [
                    {
                        "eval_time": at,
                        "alertname": name,
                        "exp_alerts": [expected(rules, name, labels) for labels in alerts],
                    }
                    for at, name, alerts in checks
                ],
            }
        ],
    }
    path = workdir / "alerts_test.yaml"
    path.write_text(yaml.safe_dump(case, sort_keys=False))
    return subprocess.run([promtool(), "test", "rules", str(path)], capture_output=True, text=True, timeout=120)
