"""What a real cluster needs of the manifests: a storage class for the shared cache, probes that survive a
busy node, the Hugging Face token where the source is gated, and the registry's pull secret."""

from __future__ import annotations

from pathlib import Path

import pytest
from gated_sources import builtin_sources, gated_sources, is_gated
from k8s_manifests import K8S_DIR, by_kind, container_env, documents, manifest_files, pod_specs

DEPLOY_DOC = Path(__file__).resolve().parents[2] / "docs" / "deploy.md"
FILES = manifest_files()


def _containers():
    # The tune Job reads the Deployment's ConfigMap: ConfigMaps are looked up across the files.
    every_doc = [doc for path in FILES for doc in documents(path)]
    for path in FILES:
        for doc in documents(path):
            for role, pod in pod_specs(doc):
                for container in [*pod.get("initContainers", []), *pod["containers"]]:
                    yield path, every_doc, pod, container


def test_gated_prefixes_cover_the_builtin_llama_sources() -> None:
    sources = builtin_sources()
    assert is_gated(sources["meta/llama-3.1-8b-instruct"][0]) and is_gated(sources["meta/llama-3.3-70b-instruct"][0])
    assert not is_gated("hf://Qwen/Qwen2.5-0.5B-Instruct")


def test_cache_claim_names_a_read_write_many_class_placeholder_with_a_doc_step() -> None:
    claim = by_kind(documents(K8S_DIR / "cache-pvc.yaml"), "PersistentVolumeClaim")[0]
    placeholder = claim["spec"]["storageClassName"]
    assert placeholder == "rwx-storage-class" and claim["spec"]["accessModes"] == ["ReadWriteMany"]
    assert placeholder in DEPLOY_DOC.read_text() and "kubectl get storageclass" in DEPLOY_DOC.read_text()


@pytest.mark.parametrize("probe", ["startupProbe", "readinessProbe", "livenessProbe"])
def test_probes_allow_a_busy_server_five_seconds(probe: str) -> None:
    probed = [container for _, _, _, container in _containers() if probe in container]
    assert len(probed) >= 3
    for container in probed:
        assert container[probe].get("timeoutSeconds", 1) >= 5, f"{container['name']}: {probe}"


def test_hf_token_is_required_where_the_source_is_gated_and_ngc_key_optional() -> None:
    checked = 0
    for path, docs, _, container in _containers():
        env = container_env(container, docs)
        gated = gated_sources(env.get("NIM_MODEL_NAME"), [*container.get("args", []), *env.values()])
        refs = {
            item["name"]: item["valueFrom"]["secretKeyRef"]
            for item in container.get("env", [])
            if "secretKeyRef" in item.get("valueFrom", {})
        }
        if gated:
            checked += 1
            assert "HF_TOKEN" in refs, f"{path.name}:{container['name']} reaches {gated} without HF_TOKEN"
            assert not refs["HF_TOKEN"].get("optional", False), f"{path.name}:{container['name']}: HF_TOKEN optional"
        if "NGC_API_KEY" in refs:
            assert refs["NGC_API_KEY"].get("optional") is True, f"{path.name}:{container['name']}"
    # The LeaderWorkerSet's Kimi K2 and its draft are public: the Deployment's two containers and the tune Job.
    assert checked >= 3, "the deployment and the tune job reach gated Llama sources"


def test_every_pod_names_the_documented_pull_secret() -> None:
    pods = [(path, pod) for path in FILES for doc in documents(path) for _, pod in pod_specs(doc)]
    assert pods
    for path, pod in pods:
        assert pod.get("imagePullSecrets") == [{"name": "nim-registry"}], path.name
    text = DEPLOY_DOC.read_text()
    assert "kubectl create secret docker-registry nim-registry" in text and "imagePullSecrets" in text
