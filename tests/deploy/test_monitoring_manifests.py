"""deploy/monitoring's Prometheus Operator resources: the PodMonitor and the PrometheusRules (shipped and rendered by
`nim-specdec alert-rules`) against the operator's schemas, the PodMonitor against the pods it must scrape, the
shipped PrometheusRule against the rules files it carries (and promtool's own check of its groups)."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml
from k8s_manifests import K8S_DIR, by_kind, documents, pod_specs
from prometheus_operator_schema import SCHEMAS
from promtool_alerts import promtool

ROOT = Path(__file__).resolve().parents[2]
MONITORING = ROOT / "deploy" / "monitoring"
POD_MONITORS = documents(MONITORING / "podmonitor.yaml")
SHIPPED_RULE = documents(MONITORING / "prometheus-rule.yaml")


def _matches(selector: dict, labels: dict) -> bool:
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for term in selector.get("matchExpressions") or []:
        present, value = term["key"] in labels, labels.get(term["key"])
        ok = {
            "In": present and value in term.get("values", []),
            "NotIn": not present or value not in term.get("values", []),
            "Exists": present,
            "DoesNotExist": not present,
        }[term["operator"]]
        if not ok:
            return False
    return True


@pytest.mark.parametrize("doc", POD_MONITORS + SHIPPED_RULE, ids=lambda d: f"{d['kind']}-{d['metadata']['name']}")
def test_resources_follow_the_operators_schema(doc: dict) -> None:
    jsonschema.validate(doc, SCHEMAS[doc["kind"]])


def test_the_schema_refuses_a_misspelt_field() -> None:
    bad = copy.deepcopy(POD_MONITORS[0])
    bad["spec"]["podMetricsEndpoints"][0]["paht"] = "/v1/metrics"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, SCHEMAS["PodMonitor"])
    late = copy.deepcopy(SHIPPED_RULE[0])
    late["spec"]["groups"][0]["interval"] = "30 seconds"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(late, SCHEMAS["PrometheusRule"])


def _serving_pods() -> list[tuple[str, str, dict, dict]]:
    """(file, namespace, pod template labels, serving container) of every Deployment and LWS leader."""
    out = []
    for path in (
        K8S_DIR / "deployment.yaml",
        K8S_DIR / "airgapped.yaml",
        K8S_DIR / "multinode" / "leaderworkerset.yaml",
    ):
        for doc in by_kind(documents(path), "Deployment") + by_kind(documents(path), "LeaderWorkerSet"):
            if doc["kind"] == "Deployment":
                labels = doc["spec"]["template"]["metadata"]["labels"]
            else:  # LWS labels every pod of the set with its name; the leader template adds role: leader
                labels = {
                    **doc["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["metadata"]["labels"],
                    "leaderworkerset.sigs.k8s.io/name": doc["metadata"]["name"],
                }
            role, pod = next((r, p) for r, p in pod_specs(doc) if r != "worker")
            out.append((path.name, doc["metadata"]["namespace"], labels, pod["containers"][0]))
    return out


@pytest.mark.parametrize("pod", _serving_pods(), ids=lambda p: p[0])
def test_every_serving_pod_is_scraped_at_v1_metrics(pod) -> None:
    _, namespace, labels, container = pod
    monitors = [m for m in POD_MONITORS if _matches(m["spec"]["selector"], labels)]
    assert len(monitors) == 1, f"{len(monitors)} PodMonitors select {labels}"
    spec = monitors[0]["spec"]
    assert namespace in spec["namespaceSelector"]["matchNames"]
    ports = {p.get("name") for p in container["ports"]}
    for endpoint in spec["podMetricsEndpoints"]:
        assert endpoint["port"] in ports and endpoint["path"] == "/v1/metrics"


def test_no_worker_pod_is_scraped() -> None:
    doc = by_kind(documents(K8S_DIR / "multinode" / "leaderworkerset.yaml"), "LeaderWorkerSet")[0]
    labels = {
        **(doc["spec"]["leaderWorkerTemplate"]["workerTemplate"].get("metadata") or {}).get("labels", {}),
        "leaderworkerset.sigs.k8s.io/name": doc["metadata"]["name"],
    }
    assert not any(_matches(m["spec"]["selector"], labels) for m in POD_MONITORS)


def test_shipped_prometheus_rule_carries_the_rules_files() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "monitoring_rule.py"), "--check"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def test_promtool_checks_the_groups_of_every_prometheus_rule(tmp_path: Path) -> None:
    from test_tuned_alerts import render  # the rendered resource, from a tune.json of the tests

    done = render(tmp_path)
    assert done.returncode == 0, done.stderr
    rendered = yaml.safe_load(done.stdout)
    jsonschema.validate(rendered, SCHEMAS["PrometheusRule"])
    for i, resource in enumerate([*SHIPPED_RULE, rendered]):
        path = tmp_path / f"groups{i}.yaml"
        path.write_text(yaml.safe_dump({"groups": resource["spec"]["groups"]}))
        check = subprocess.run([promtool(), "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
        assert check.returncode == 0, check.stdout + check.stderr
