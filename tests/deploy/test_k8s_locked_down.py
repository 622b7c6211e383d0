"""What a locked-down cluster asks of every pod the manifests make: the restricted Pod Security standard, a
read-only root file system with a writable volume wherever the server writes, no UID of our choosing, no
service-account token, requests equal to limits, one namespace that enforces the standard, a NetworkPolicy
per workload; and the shutdown sequence: each grace period covers its preStop pause and vLLM's drain."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from k8s_manifests import K8S_DIR, by_kind, container_env, container_named, documents, manifest_files, pod_specs

FILES = manifest_files()
DOCKERFILE = Path(__file__).resolve().parents[2] / "docker" / "Dockerfile"
EVERY_DOC = [doc for path in FILES for doc in documents(path)]
# Exit time allowed to vLLM after its drain, before the kubelet's SIGKILL.
EXIT_MARGIN_S = 30


def _containers(pod: dict) -> list[dict]:
    return [*pod.get("initContainers", []), *pod["containers"]]


def _pods():
    for path in FILES:
        for doc in documents(path):
            for role, pod in pod_specs(doc):
                yield path, doc, role, pod


def image_home() -> str:
    """HOME as the image sets it: where ~/.config, ~/.triton and ~/.nv land."""
    found = re.search(r"^ENV HOME=(\S+)", DOCKERFILE.read_text(), re.MULTILINE)
    assert found, "the Dockerfile sets HOME"
    return found.group(1)


def _writable_volume_at(path: str, container: dict, pod: dict) -> str | None:
    """The volume the container writes `path` on (the deepest mount above it), or None if none / read-only."""
    mounts = [m for m in container.get("volumeMounts", []) if (path + "/").startswith(m["mountPath"].rstrip("/") + "/")]
    if not mounts:
        return None
    mount = max(mounts, key=lambda m: len(m["mountPath"]))
    volume = {v["name"]: v for v in pod["volumes"]}[mount["name"]]
    read_only = mount.get("readOnly") or volume.get("persistentVolumeClaim", {}).get("readOnly")
    return None if read_only or not ({"emptyDir", "persistentVolumeClaim"} & volume.keys()) else mount["name"]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_pods_meet_the_restricted_pod_security_standard(path: Path) -> None:
    for doc in documents(path):
        for role, pod in pod_specs(doc):
            security = pod["securityContext"]
            assert security["runAsNonRoot"] is True, role
            assert security["seccompProfile"]["type"] == "RuntimeDefault", role
            # The image's user, or the one the platform assigns: never a UID or group written here.
            assert not {"runAsUser", "runAsGroup"} & security.keys(), role
            assert pod["automountServiceAccountToken"] is False, role
            for container in _containers(pod):
                context = container["securityContext"]
                assert context["allowPrivilegeEscalation"] is False, container["name"]
                assert context["capabilities"] == {"drop": ["ALL"]}, container["name"]
                assert context["readOnlyRootFilesystem"] is True, container["name"]
                assert not {"runAsUser", "runAsGroup", "privileged"} & context.keys(), container["name"]


def test_every_container_writes_only_on_volumes_where_the_server_writes() -> None:
    home = image_home()
    checked = 0
    for path, _, role, pod in _pods():
        for container in _containers(pod):
            env = container_env(container, EVERY_DOC)
            where = {"/tmp": "tmp", home: "home", env["NIM_CACHE_PATH"]: None}
            if container["name"] != "prefetch":  # the server links its files into the workspace
                where[env["NIM_WORKSPACE"]] = "workspace"
            for target, volume in where.items():
                found = _writable_volume_at(target, container, pod)
                assert found, f"{path.name}:{role}:{container['name']}: nothing writable at {target}"
                assert volume is None or found == volume, f"{path.name}:{container['name']}: {target} on {found}"
            checked += 1
    assert checked >= 7


def test_requests_equal_limits() -> None:
    for path, _, _, pod in _pods():
        for container in _containers(pod):
            resources = container["resources"]
            assert {"cpu", "memory"} <= resources["requests"].keys(), f"{path.name}:{container['name']}"
            assert resources["requests"] == resources["limits"], f"{path.name}:{container['name']}"


def test_one_namespace_that_enforces_the_restricted_standard() -> None:
    (namespace,) = by_kind(documents(K8S_DIR / "namespace.yaml"), "Namespace")
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    for doc in EVERY_DOC:
        if doc["kind"] != "Namespace":
            assert doc["metadata"]["namespace"] == namespace["metadata"]["name"], doc["metadata"]["name"]


def _pause(container: dict) -> int:
    return container["lifecycle"]["preStop"]["sleep"]["seconds"]


def test_grace_periods_cover_the_pause_and_the_drain() -> None:
    checked = 0
    for path, doc, role, pod in _pods():
        for container in pod["containers"]:
            if "preStop" not in container.get("lifecycle", {}):
                continue
            drain = int(container_env(container, EVERY_DOC)["NIM_SHUTDOWN_TIMEOUT"])
            assert pod["terminationGracePeriodSeconds"] >= _pause(container) + EXIT_MARGIN_S, f"{path.name}:{role}"
            if role != "worker":
                # The Service has stopped routing to the pod before SIGTERM starts the drain.
                assert 5 <= _pause(container) and pod["terminationGracePeriodSeconds"] >= (
                    _pause(container) + drain + EXIT_MARGIN_S
                ), f"{path.name}:{role}"
            checked += 1
    assert checked >= 4


def test_workers_outlive_their_leaders_drain() -> None:
    lws = by_kind(documents(K8S_DIR / "multinode" / "leaderworkerset.yaml"), "LeaderWorkerSet")[0]
    pods = dict(pod_specs(lws))
    leader, worker = pods["leader"]["containers"][0], container_named(pods["worker"], "worker")
    drain = int(container_env(leader, EVERY_DOC)["NIM_SHUTDOWN_TIMEOUT"])
    assert _pause(worker) >= _pause(leader) + drain
    assert pods["worker"]["terminationGracePeriodSeconds"] >= _pause(worker) + EXIT_MARGIN_S


def test_rollouts_keep_capacity_and_wait_for_a_slow_start() -> None:
    for deployment in by_kind(EVERY_DOC, "Deployment"):
        spec = deployment["spec"]
        startup = spec["template"]["spec"]["containers"][0]["startupProbe"]
        assert spec["progressDeadlineSeconds"] > startup["periodSeconds"] * startup["failureThreshold"]
        if spec["replicas"] > 1:
            rolling = spec["strategy"]["rollingUpdate"]
            assert rolling["maxUnavailable"] == 0 and rolling["maxSurge"] >= 1, deployment["metadata"]["name"]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_a_network_policy_selects_every_pod_and_admits_its_clients(path: Path) -> None:
    docs = documents(path)
    policies = by_kind(docs, "NetworkPolicy")
    for doc in docs:
        for role, pod in pod_specs(doc):
            if doc["kind"] == "LeaderWorkerSet":  # LWS adds its name label to every pod of the set
                template = doc["spec"]["leaderWorkerTemplate"][f"{role}Template"]
                labels = {"leaderworkerset.sigs.k8s.io/name": doc["metadata"]["name"]}
            else:
                template, labels = doc["spec"]["template"], {}
            labels.update(template.get("metadata", {}).get("labels", {}))
            selecting = [p for p in policies if p["spec"]["podSelector"]["matchLabels"].items() <= labels.items()]
            assert selecting, f"{path.name}:{role}: no NetworkPolicy"
            rules = [rule for policy in selecting for rule in policy["spec"].get("ingress", [])]
            ports = {port["port"] for rule in rules if "from" not in rule for port in rule.get("ports", [])}
            if any("ports" in c for c in pod["containers"]):
                assert "http" in ports, f"{path.name}:{role}: {ports}"
            if role == "worker":  # the group's pods reach each other on any port
                assert any(
                    "ports" not in rule and labels.items() >= rule["from"][0]["podSelector"]["matchLabels"].items()
                    for rule in rules
                    if "from" in rule
                )


def _openshift_kustomization() -> dict:
    text = (Path(__file__).resolve().parents[2] / "docs" / "deploy.md").read_text()
    section = text[text.index("**OpenShift.**") :]
    start = section.index("```yaml\n") + len("```yaml\n")
    return yaml.safe_load(section[start : section.index("```", start)])


def _remove(doc: dict, pointer: str) -> None:
    *parents, last = pointer.strip("/").split("/")
    node = doc
    for key in parents:
        node = node[key]
    del node[last]  # a missing path fails, as it does in kustomize


_IDS = {"runAsUser", "runAsGroup", "fsGroup", "fsGroupChangePolicy", "supplementalGroups"}


def test_the_documented_openshift_variant_leaves_no_id_for_the_platform_to_refuse() -> None:
    kustomization = _openshift_kustomization()
    patched = 0
    # Fresh copies, with YAML's aliases expanded as kustomize expands them: the patch edits them.
    for doc in json.loads(json.dumps([doc for path in FILES for doc in documents(path)])):
        for patch in kustomization["patches"]:
            if patch["target"]["kind"] == doc["kind"]:
                for op in yaml.safe_load(patch["patch"]):
                    assert op["op"] == "remove"
                    _remove(doc, op["path"])
        for role, pod in pod_specs(doc):
            assert not _IDS & pod["securityContext"].keys(), f"{doc['metadata']['name']}:{role}"
            for container in _containers(pod):
                assert not _IDS & container["securityContext"].keys(), container["name"]
            assert pod["securityContext"]["runAsNonRoot"] is True
            patched += 1
    assert patched >= 5 and kustomization["resources"]


def test_the_image_workspace_is_the_containers_own_not_on_the_cache_volume() -> None:
    """Two `docker run`s on one cache volume with different local drafts: each links its draft in its own
    file system, at one path in every container (vLLM keys its compile cache on the model's path)."""
    text = DOCKERFILE.read_text()
    env = dict(re.findall(r"\b(NIM_CACHE_PATH|NIM_WORKSPACE)=(\S+)", text))
    volumes = re.findall(r'^VOLUME \["([^"]+)"\]', text, re.MULTILINE)
    assert env["NIM_WORKSPACE"] == "/opt/nim/workspace" and volumes == [env["NIM_CACHE_PATH"]], (env, volumes)
    assert not (env["NIM_WORKSPACE"] + "/").startswith(env["NIM_CACHE_PATH"] + "/")
    assert (env["NIM_WORKSPACE"] + "/").startswith(image_home() + "/")  # HOME: writable by the image's user
