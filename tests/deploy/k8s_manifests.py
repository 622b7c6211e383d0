"""Reading the Kubernetes manifests under deploy/k8s: documents, pod specs, container env.

Pure functions over the parsed YAML, so the tests can turn a manifest into the environment and
arguments its container would start with.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import yaml

K8S_DIR = Path(__file__).resolve().parents[2] / "deploy" / "k8s"
# Secrets are never in the manifests; the tests stand in this value and check it never shows.
SECRET_STAND_IN = "stand-in-secret-value-0123456789"


def manifest_files() -> list[Path]:
    return sorted(K8S_DIR.rglob("*.yaml"))


def documents(path: Path) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def by_kind(docs: list[dict], kind: str) -> list[dict]:
    return [doc for doc in docs if doc["kind"] == kind]


def pod_specs(doc: dict) -> Iterator[tuple[str, dict]]:
    """(role, pod spec) for every pod template a workload holds."""
    if doc["kind"] in ("Deployment", "StatefulSet", "Job"):
        yield "pod", doc["spec"]["template"]["spec"]
    elif doc["kind"] == "LeaderWorkerSet":
        lwt = doc["spec"]["leaderWorkerTemplate"]
        yield "leader", lwt["leaderTemplate"]["spec"]
        yield "worker", lwt["workerTemplate"]["spec"]


def container_env(container: dict, docs: list[dict]) -> dict[str, str]:
    """The environment the container starts with: ConfigMaps of the same file, then `env`."""
    config_maps = {doc["metadata"]["name"]: doc.get("data", {}) for doc in by_kind(docs, "ConfigMap")}
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        env.update(config_maps[source["configMapRef"]["name"]])
    for item in container.get("env", []):
        if "value" in item:
            env[item["name"]] = str(item["value"])
        elif "secretKeyRef" in item["valueFrom"]:
            env[item["name"]] = SECRET_STAND_IN
    return env


def container_named(pod: dict, name: str) -> dict:
    for container in [*pod.get("initContainers", []), *pod["containers"]]:
        if container["name"] == name:
            return container
    raise KeyError(name)
