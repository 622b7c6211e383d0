"""What the manifests do on a cluster's second day: a ConfigMap change rolls the pods (the checksum annotation
scripts/k8s_config_checksum.py writes), GPU pods land on GPU nodes, the LeaderWorkerSet keeps a group whose
download is in progress and caches its model on a claim that holds it, and each startup probe times the load
only, the download being the required init container's."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from k8s_manifests import K8S_DIR, by_kind, container_env, documents, manifest_files, pod_specs
from test_k8s_multinode import CONFIGS, LWS_FILE, _weight_bytes
from test_k8s_plans import plan

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "k8s_config_checksum.py"
sys.path.insert(0, str(SCRIPT.parent))
from k8s_config_checksum import digest, rewritten  # noqa: E402

UNITS = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
# docs/deploy.md, "Sizing the startup probe": the load from a filled cache reads each node's share of the
# weights at a network volume's 1 GB/s and compiles (10 minutes allowed), and the probe allows twice that.
READ_RATE = 1e9
COMPILE_SECONDS = 600


def _templates(doc: dict) -> list[tuple[str, dict]]:
    """(role, pod template with its metadata) of a workload."""
    if doc["kind"] in ("Deployment", "Job"):
        return [("pod", doc["spec"]["template"])]
    if doc["kind"] == "LeaderWorkerSet":
        lwt = doc["spec"]["leaderWorkerTemplate"]
        return [("leader", lwt["leaderTemplate"]), ("worker", lwt["workerTemplate"])]
    return []


def _config_maps_read(template: dict) -> set[str]:
    spec = template["spec"]
    return {
        source["configMapRef"]["name"]
        for container in [*spec.get("initContainers", []), *spec["containers"]]
        for source in container.get("envFrom", [])
        if "configMapRef" in source
    }


def _rolling_workloads():
    """Every Deployment and LeaderWorkerSet pod template reading a ConfigMap of its own file (a Job's template
    cannot change after it is created: the tune Job reads the Deployment's ConfigMap at its start)."""
    for path in manifest_files():
        docs = documents(path)
        maps = {doc["metadata"]["name"]: doc for doc in by_kind(docs, "ConfigMap")}
        for doc in docs:
            if doc["kind"] in ("Deployment", "LeaderWorkerSet"):
                for role, template in _templates(doc):
                    for name in _config_maps_read(template) & set(maps):
                        yield path, role, template, name, maps[name]


def test_every_pod_template_carries_the_digest_of_the_config_map_it_reads() -> None:
    found = list(_rolling_workloads())
    assert {(p.name, role) for p, role, *_ in found} >= {
        ("deployment.yaml", "pod"),
        ("leaderworkerset.yaml", "leader"),
        ("leaderworkerset.yaml", "worker"),
    }
    for path, role, template, name, config_map in found:
        annotation = template["metadata"]["annotations"][f"checksum/{name}"]
        assert annotation == digest(config_map["data"]), f"{path.name} {role}: run scripts/k8s_config_checksum.py"
    done = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_a_config_map_change_changes_the_pod_template_once_the_script_runs(tmp_path: Path) -> None:
    """Edit a value: --check names the stale annotation (exit 1); the script rewrites it, only it, and the pod
    template now differs from before, which is what makes the Deployment roll its pods."""
    copy = tmp_path / "deployment.yaml"
    original = (K8S_DIR / "deployment.yaml").read_text()
    copy.write_text(original.replace("NIM_LOG_LEVEL: INFO", "NIM_LOG_LEVEL: DEBUG"))
    check = subprocess.run([sys.executable, str(SCRIPT), "--check", str(copy)], capture_output=True, text=True)
    assert check.returncode == 1 and "checksum/nim-specdec-env" in check.stderr
    assert subprocess.run([sys.executable, str(SCRIPT), str(copy)], capture_output=True).returncode == 0

    def template(text: str) -> dict:
        return by_kind([d for d in yaml.safe_load_all(text) if d], "Deployment")[0]["spec"]["template"]

    before, after = template(original), template(copy.read_text())
    assert before != after
    assert before["spec"] == after["spec"]  # only the annotation moved
    changed = [line for line in copy.read_text().splitlines() if line not in original.splitlines()]
    assert len(changed) == 2 and any("NIM_LOG_LEVEL: DEBUG" in line for line in changed)
    assert subprocess.run([sys.executable, str(SCRIPT), "--check", str(copy)], capture_output=True).returncode == 0


@pytest.mark.parametrize(
    "data, same",
    [
        ({"A": "1", "B": "2"}, {"B": "2", "A": "1"}),  # key order does not count
        ({}, None),
    ],
)
def test_the_digest_is_of_the_values_only(data: dict, same: dict | None) -> None:
    assert re.fullmatch(r"[0-9a-f]{64}", digest(data))
    if same is not None:
        assert digest(data) == digest(same)
    assert digest(data) != digest({**data, "A": "changed"})


def test_a_checksum_naming_no_config_map_is_refused() -> None:
    text = "kind: Deployment\nmetadata:\n  annotations:\n    checksum/missing: x\n"
    with pytest.raises(ValueError, match="checksum/missing names no ConfigMap"):
        rewritten(text, "x.yaml")


def test_gpu_pods_select_gpu_nodes_and_tolerate_their_taint() -> None:
    seen = []
    for path in manifest_files():
        for doc in documents(path):
            for role, spec in pod_specs(doc):
                limits = [c.get("resources", {}).get("limits", {}) for c in spec["containers"]]
                if not any("nvidia.com/gpu" in limit for limit in limits):
                    continue
                seen.append((path.name, role))
                assert spec["nodeSelector"] == {"nvidia.com/gpu.present": "true"}, (path.name, role)
                assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]
    # the Deployment, the air-gapped one, the tune Job, the draft training Job, the leader and the worker
    assert len(seen) == 6, seen


def _lws_and_docs() -> tuple[dict, list[dict]]:
    docs = documents(LWS_FILE)
    return by_kind(docs, "LeaderWorkerSet")[0], docs


def test_a_group_is_not_recreated_while_a_pod_of_it_is_pending() -> None:
    """RecreateGroupAfterStart: a pod downloading in its prefetch init container is Pending, and the LWS
    controller recreates the group on a restart only once no pod of it is (the default,
    RecreateGroupOnPodRestart, counts init-container restarts too)."""
    lws, _ = _lws_and_docs()
    assert lws["spec"]["leaderWorkerTemplate"]["restartPolicy"] == "RecreateGroupAfterStart"
    for role, spec in pod_specs(lws):
        names = [c["name"] for c in spec.get("initContainers", [])]
        assert names == ["prefetch"], role
        assert spec["initContainers"][0]["command"] == ["nim-specdec", "download-to-cache"]


def _bytes(quantity: str) -> int:
    number, unit = re.fullmatch(r"(\d+)([KMGT]i)", quantity).groups()
    return int(number) * UNITS[unit]


def test_the_multinode_claim_holds_the_model_and_its_next_commit() -> None:
    lws, docs = _lws_and_docs()
    claims = {doc["metadata"]["name"]: doc for doc in by_kind(docs, "PersistentVolumeClaim")}
    volumes = {v["name"]: v for v in lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["volumes"]}
    claim = claims[volumes["cache"]["persistentVolumeClaim"]["claimName"]]
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
    leader = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    repo = plan(container_env(leader, docs), leader["args"])[0]["target"]["source"].removeprefix("hf://")
    weights = _weight_bytes(json.loads((CONFIGS / repo.replace("/", "--") / "config.json").read_text()))
    size = _bytes(claim["spec"]["resources"]["requests"]["storage"])
    assert size >= 2 * weights, f"{size / 1e9:.0f} GB for two commits of {weights / 1e9:.0f} GB"
    assert size > _bytes("500Gi") * 2  # the shared cache-pvc.yaml claim would not hold one


@pytest.mark.parametrize("path", [K8S_DIR / "deployment.yaml", LWS_FILE], ids=lambda p: p.name)
def test_serving_pods_download_in_their_init_container_and_probe_the_load_only(path: Path) -> None:
    for doc in documents(path):
        for role, spec in pod_specs(doc):
            server = spec["containers"][0]
            if "startupProbe" not in server:
                continue
            assert [c["name"] for c in spec.get("initContainers", [])] == ["prefetch"], role
            probe = server["startupProbe"]
            budget = probe["periodSeconds"] * probe["failureThreshold"]
            assert budget >= 30 * 60, role
            if doc["kind"] == "LeaderWorkerSet":
                lws, docs = _lws_and_docs()
                leader = spec["containers"][0]
                repo = plan(container_env(leader, docs), leader["args"])[0]["target"]["source"]
                config = json.loads(
                    (CONFIGS / repo.removeprefix("hf://").replace("/", "--") / "config.json").read_text()
                )
                per_node = _weight_bytes(config) / lws["spec"]["leaderWorkerTemplate"]["size"]
                assert budget >= 2 * (per_node / READ_RATE + COMPILE_SECONDS), role
