"""Every init container pre-fetches what its pod serves, from the same ConfigMap and with no URI of its own:
its exact command, run for real against a Hub on loopback holding the built-in repositories, fills a cache
in which the serving container's plan then finds the target and the draft, offline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from k8s_manifests import K8S_DIR, container_env, container_named, documents, pod_specs
from test_k8s_plans import plan

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "model_configs"
CASES = [
    (K8S_DIR / "deployment.yaml", "pod", "nim"),
    (K8S_DIR / "multinode" / "leaderworkerset.yaml", "leader", "leader"),
    (K8S_DIR / "multinode" / "leaderworkerset.yaml", "worker", "worker"),
]


def _pod(path: Path, role: str) -> tuple[list[dict], dict]:
    docs = documents(path)
    every = [doc for p in K8S_DIR.rglob("*.yaml") for doc in documents(p)]
    for doc in docs:
        for found, pod in pod_specs(doc):
            if found == role:
                return every, pod
    raise KeyError(role)


def _host_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("NIM_", "NGC_", "HF_", "AWS_", "GOOGLE_"))}


@pytest.mark.parametrize("path, role, serving", CASES, ids=lambda v: v.name if isinstance(v, Path) else v)
def test_prefetch_fetches_what_the_pod_serves(path: Path, role: str, serving: str, tmp_path: Path) -> None:
    from servers.hf_store import HFStore

    docs, pod = _pod(path, role)
    prefetch, server = container_named(pod, "prefetch"), container_named(pod, serving)
    assert prefetch["command"] == ["nim-specdec", "download-to-cache"] and not prefetch.get("args")
    assert prefetch["envFrom"] == server["envFrom"], "the server's ConfigMap, so no source is named twice"
    assert "nvidia.com/gpu" not in prefetch["resources"]["limits"]
    cache = tmp_path / "cache"
    server_env = container_env(server, docs)
    wanted, _ = plan(server_env, server.get("args", []))
    sources = [wanted["target"]["source"], wanted["draft"]["source"]]

    hub = HFStore().start()
    try:
        for source in sources:
            repo, _, commit = source.removeprefix("hf://").partition("@")  # a built-in may pin a commit
            config = (CONFIGS / repo.replace("/", "--") / "config.json").read_bytes()
            hub.hub.repos.add(repo, {"config.json": config}, sha=commit or None)
        env = {
            **_host_env(),
            **container_env(prefetch, docs),
            **hub.env(),
            "NIM_CACHE_PATH": str(cache),
            "HOME": str(tmp_path / "home"),
        }
        done = subprocess.run(
            [sys.executable, "-m", "nim_specdec", *prefetch["command"][1:]],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        hub.close()
    assert done.returncode == 0, done.stderr
    fetched = [Path(line) for line in done.stdout.splitlines()]
    assert len(fetched) == 2 and all((folder / "config.json").is_file() for folder in fetched)
    assert all(cache.resolve() in folder.resolve().parents for folder in fetched)
    assert [json.loads((f / "config.json").read_text())["architectures"] for f in fetched] == [
        json.loads((CONFIGS / s.removeprefix("hf://").split("@")[0].replace("/", "--") / "config.json").read_text())[
            "architectures"
        ]
        for s in sources
    ]
    # The prefetch wrote nothing outside the cache it was given: no workspace of its own.
    assert not Path(server_env["NIM_WORKSPACE"]).exists()

    offline = {
        **server_env,
        "NIM_CACHE_PATH": str(cache),
        "NIM_DISABLE_MODEL_DOWNLOAD": "1",
        "NIM_WORKSPACE": str(tmp_path / "workspace"),
    }
    served, _ = plan(offline, server.get("args", []))
    assert served["target"]["local_dir"] and served["draft"]["local_dir"]
    assert [served["target"]["source"], served["draft"]["source"]] == sources
