"""The env and args in each manifest produce the intended plan: each serving container's
environment (ConfigMaps included, secrets stood in) and arguments are fed to `nim-specdec plan`,
and what the plan says is checked against the rest of the manifest (init containers, ports,
worker pods), so a manifest cannot drift from what the launcher does with it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from k8s_manifests import K8S_DIR, SECRET_STAND_IN, by_kind, container_env, container_named, documents

from nim_specdec.plan.method.builtin import default_config_dir, find, load_registry

SHIPPED = load_registry(default_config_dir())

# config.json of the mounted target and EAGLE3 draft (shapes of Llama 3.1 8B and its draft).
LLAMA_8B = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "vocab_size": 128256}
EAGLE3_8B = {
    **LLAMA_8B,
    "architectures": ["LlamaForCausalLMEagle3"],
    "num_hidden_layers": 1,
    "draft_vocab_size": 128256,
}


def plan(env: dict[str, str], args: list[str]) -> tuple[dict, str]:
    # The host's NIM_* settings and credentials must not leak into the manifest's environment.
    base = {k: v for k, v in os.environ.items() if not k.startswith(("NIM_", "NGC_", "HF_", "AWS_", "GOOGLE_"))}
    done = subprocess.run(
        [sys.executable, "-m", "nim_specdec", "plan", *args],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, f"plan failed: {done.stderr}"
    assert SECRET_STAND_IN not in done.stdout + done.stderr, "a secret value reached the plan's output"
    return json.loads(done.stdout), done.stderr


def _workload(path: Path, kind: str) -> tuple[list[dict], dict]:
    docs = documents(path)
    return docs, by_kind(docs, kind)[0]


def _spec_arg(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def test_deployment_serves_the_builtin_eagle3_with_the_prefetched_sources() -> None:
    docs, deployment = _workload(K8S_DIR / "deployment.yaml", "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    nim = container_named(pod, "nim")
    env = container_env(nim, docs)
    result, _ = plan(env, nim.get("args", []))

    assert result["mode"] == "model-specific"
    spec = result["speculative"]
    assert spec["enabled"] is True and spec["method"] == "eagle3"
    workspace = env["NIM_WORKSPACE"]
    assert result["draft"]["path"] == spec["config"]["model"] == f"{workspace}/eagle3_draft"
    assert json.loads(_spec_arg(result["argv"], "--speculative-config"))["model"] == f"{workspace}/eagle3_draft"
    assert _spec_arg(result["argv"], "--gpu-memory-utilization") == "0.90"
    assert int(_spec_arg(result["argv"], "--port")) == nim["ports"][0]["containerPort"]
    # The init container reads the same ConfigMap, so it fetches what serve would, into the same cache
    # (test_k8s_prefetch.py runs it).
    prefetch = container_named(pod, "prefetch")
    assert prefetch["command"] == ["nim-specdec", "download-to-cache"] and "args" not in prefetch
    assert container_env(prefetch, docs)["NIM_CACHE_PATH"] == env["NIM_CACHE_PATH"] == result["cache_path"]


def test_airgapped_deployment_links_the_mounted_draft(tmp_path: Path) -> None:
    docs, deployment = _workload(K8S_DIR / "airgapped.yaml", "Deployment")
    nim = deployment["spec"]["template"]["spec"]["containers"][0]
    env = container_env(nim, docs)
    assert not any(item.get("valueFrom") for item in nim.get("env", [])), "air-gapped: no keys"
    assert env["NIM_DISABLE_MODEL_DOWNLOAD"] == "1"
    # The mounted model directories, made here with a config.json each.
    mounts = {m["mountPath"] for m in nim["volumeMounts"]}
    for variable, config in (("NIM_MODEL_PATH", LLAMA_8B), ("NIM_DRAFT_MODEL_PATH", EAGLE3_8B)):
        assert env[variable] in mounts
        local = tmp_path / env[variable].lstrip("/")
        local.mkdir(parents=True)
        (local / "config.json").write_text(json.dumps(config))
        env[variable] = str(local)

    result, _ = plan(env, nim["args"])
    assert result["mode"] == "model-free"
    checks = result.get("preflight", {}).get("checks", [])
    assert not [check for check in checks if check["result"] == "fail"], checks
    assert result["target"]["model"] == env["NIM_MODEL_PATH"]
    assert result["draft"]["source"] == env["NIM_DRAFT_MODEL_PATH"]
    assert result["draft"]["path"] == result["speculative"]["config"]["model"] == f"{env['NIM_WORKSPACE']}/eagle3_draft"
    # Served as the built-in model of the same weights is: NIM's name first, then the repository id.
    at = result["argv"].index("--served-model-name")
    assert result["argv"][at + 1 : at + 3] == find(SHIPPED, ["llama-3.1-8b-instruct"]).served_names()
    assert result["argv"][at + 1] == "meta/llama-3.1-8b-instruct" and "NIM_SERVED_MODEL_NAME" not in env
