"""checkov, the policy scanner `make lint` runs, passes the manifests and the Dockerfile with 0 failed checks,
and also the LeaderWorkerSet's pod templates, which it cannot read as they are (it does not know the kind):
here they are scanned as the Deployments they resemble. Each skip carries its reason, and a manifest that
loses what a check asks for fails again, so the scan is not passing by accident."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
from pathlib import Path

import yaml
from k8s_manifests import K8S_DIR, by_kind, documents, pod_specs

REPO = Path(__file__).resolve().parents[2]


def checkov() -> str:
    found = os.environ.get("CHECKOV") or shutil.which("checkov", path=str(REPO / ".venv-checkov" / "bin"))
    assert found and Path(found).is_file(), "checkov not found: `make checkov-venv` makes it (or set CHECKOV)"
    return found


def scan(*args: str) -> dict:
    done = subprocess.run(
        [checkov(), *args, "--skip-download", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode in (0, 1), done.stderr[-2000:]
    report = json.loads(done.stdout)
    reports = report if isinstance(report, list) else [report]
    failed = [check for each in reports for check in each["results"].get("failed_checks", [])]
    skipped = [check for each in reports for check in each["results"].get("skipped_checks", [])]
    return {"failed": failed, "skipped": skipped, "passed": sum(each["summary"]["passed"] for each in reports)}


def _names(checks: list[dict]) -> list[str]:
    return [f"{check['check_id']} {check['resource']}" for check in checks]


def test_manifests_and_dockerfile_have_no_failed_check() -> None:
    kubernetes = scan("-d", str(REPO / "deploy"), "--framework", "kubernetes")
    assert kubernetes["failed"] == [], _names(kubernetes["failed"])
    assert kubernetes["passed"] >= 250
    dockerfile = scan("-f", str(REPO / "docker" / "Dockerfile"), "--framework", "dockerfile")
    assert dockerfile["failed"] == [], _names(dockerfile["failed"])
    for check in kubernetes["skipped"] + dockerfile["skipped"]:
        reason = check["check_result"].get("suppress_comment", "")
        assert len(reason) > 30 and reason != "No comment provided", check["check_id"]


def _lws_as_deployments(tmp_path: Path) -> Path:
    every = documents(K8S_DIR / "multinode" / "leaderworkerset.yaml")
    lws = by_kind(every, "LeaderWorkerSet")[0]
    docs = [doc for doc in every if doc["kind"] != "LeaderWorkerSet"]
    templates = lws["spec"]["leaderWorkerTemplate"]
    for role, pod in pod_specs(lws):
        labels = {"leaderworkerset.sigs.k8s.io/name": lws["metadata"]["name"]}
        template_meta = templates[f"{role}Template"].get("metadata", {})
        labels.update(template_meta.get("labels", {}))
        metadata = copy.deepcopy(lws["metadata"])
        metadata["annotations"] = {**metadata.get("annotations", {}), **template_meta.get("annotations", {})}
        docs.append(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {**metadata, "name": f"{lws['metadata']['name']}-{role}"},
                "spec": {
                    "selector": {"matchLabels": labels},
                    "template": {"metadata": {"labels": labels}, "spec": copy.deepcopy(pod)},
                },
            }
        )
    out = tmp_path / "lws-as-deployments.yaml"
    out.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return out


def test_the_leaderworkersets_pods_pass_as_deployments(tmp_path: Path) -> None:
    result = scan("-f", str(_lws_as_deployments(tmp_path)), "--framework", "kubernetes")
    assert result["failed"] == [], _names(result["failed"])
    assert {check["resource"].split(".")[-1] for check in result["skipped"]} == {
        "nim-specdec-multinode-leader",
        "nim-specdec-multinode-worker",
    }


def test_a_manifest_without_the_hardening_fails_again(tmp_path: Path) -> None:
    docs = documents(K8S_DIR / "deployment.yaml")
    pod = by_kind(docs, "Deployment")[0]["spec"]["template"]["spec"]
    pod.pop("automountServiceAccountToken")
    for container in pod["containers"]:
        container["securityContext"] = {**container["securityContext"], "readOnlyRootFilesystem": False}
    broken = tmp_path / "deployment.yaml"
    broken.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    failed = {check["check_id"] for check in scan("-f", str(broken), "--framework", "kubernetes")["failed"]}
    assert failed == {"CKV_K8S_22", "CKV_K8S_38"}
