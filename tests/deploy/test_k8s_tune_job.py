"""The tune Job tunes what the Deployment serves: same ConfigMap, same vLLM arguments, a capture on the
shared cache volume; and its command line is one `nim-specdec tune` accepts."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

from k8s_manifests import K8S_DIR, by_kind, container_env, container_named, documents

OFFLINE = {"NIM_DISABLE_MODEL_DOWNLOAD": "1", "HF_HUB_OFFLINE": "1"}
DOCKERFILE = Path(__file__).resolve().parents[2] / "docker" / "Dockerfile"


def _job_and_deployment():
    job_docs = documents(K8S_DIR / "tune-job.yaml")
    deploy_docs = documents(K8S_DIR / "deployment.yaml")
    job = by_kind(job_docs, "Job")[0]["spec"]["template"]["spec"]
    serving = by_kind(deploy_docs, "Deployment")[0]["spec"]["template"]["spec"]
    # The Job reads the Deployment's ConfigMap: resolve its env against that file's documents.
    tune = container_named(job, "tune")
    return tune, container_env(tune, deploy_docs), container_named(serving, "nim"), deploy_docs, job, serving


def _tune_argv(script: str, env: dict[str, str]) -> list[str]:
    line = script.split("exec ", 1)[1].replace("\\\n", " ")
    argv = shlex.split(line.splitlines()[0])
    return [os.path.expandvars(token) if token.startswith("$") else token for token in argv]


def test_the_job_tunes_what_the_deployment_serves():
    tune, env, nim, deploy_docs, job, serving = _job_and_deployment()
    serving_env = container_env(nim, deploy_docs)
    # The serving environment, with downloads off: the Job reads the cache the Deployment filled.
    assert {k: v for k, v in env.items() if not k.startswith("TUNE_") and k not in OFFLINE} == serving_env
    assert {k: env[k] for k in OFFLINE} == OFFLINE
    argv = _tune_argv(tune["command"][2], env)
    assert argv[:2] == ["nim-specdec", "tune"]
    assert argv[argv.index("--") + 1 :] == nim["args"]
    # The capture the serving pods write by default, on the cache volume both mount.
    assert env["TUNE_TRACE"] == f"{serving_env['NIM_CACHE_PATH']}/captures/payloads.jsonl"
    mounts = {m["mountPath"]: m["name"] for m in tune["volumeMounts"]}
    volumes = {v["name"]: v for v in job["volumes"]}
    assert volumes[mounts[serving_env["NIM_CACHE_PATH"]]] == {
        "name": "cache",
        "persistentVolumeClaim": {"claimName": "nim-cache"},
    }
    assert env["TUNE_OUT"].startswith(serving_env["NIM_CACHE_PATH"] + "/")
    assert tune["resources"] == nim["resources"]
    assert by_kind(documents(K8S_DIR / "tune-job.yaml"), "Job")[0]["spec"]["backoffLimit"] == 0


def test_the_jobs_command_line_is_accepted_by_tune(tmp_path: Path):
    """Run the Job's exact tune command with its environment: options and configuration resolve, and it
    stops (exit 2) only at the missing AIPerf, before any server would start."""
    tune, env, *_ = _job_and_deployment()
    trace = tmp_path / "payloads.jsonl"
    trace.write_text('{"timestamp": 0, "payload": {"messages": [{"role": "user", "content": "hi"}]}}\n')
    env = {
        **env,
        "TUNE_TRACE": str(trace),
        "TUNE_OUT": str(tmp_path / "out"),
        "NIM_CACHE_PATH": str(tmp_path / "cache"),
    }
    old = dict(os.environ)
    try:
        os.environ.update(env)
        argv = _tune_argv(tune["command"][2], env)
    finally:
        os.environ.clear()
        os.environ.update(old)
    aiperf = argv.index("--aiperf")
    argv[aiperf + 1] = str(tmp_path / "no-aiperf-here")
    base = {k: v for k, v in os.environ.items() if not k.startswith(("NIM_", "NGC_", "HF_", "AWS_", "GOOGLE_"))}
    done = subprocess.run(
        [sys.executable, "-m", "nim_specdec", *argv[1:]],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "--aiperf: no AIPerf executable" in done.stderr
    assert not (tmp_path / "out" / "logs").exists()


def test_the_job_installs_nothing_and_reaches_no_network():
    """No package index, no Hub: AIPerf is the image's (the Dockerfile's venv), the model the cache's, and the
    NetworkPolicy lets no packet out (policyTypes Egress with no rule) or in."""
    tune, env, *_, job, _ = _job_and_deployment()
    script = tune["command"][2]
    for word in ("pip", "venv", "install", "curl", "wget", "apt"):
        assert word not in script, word
    argv = _tune_argv(script, env)
    aiperf = argv[argv.index("--aiperf") + 1]
    venv = aiperf.removesuffix("/bin/aiperf")
    dockerfile = DOCKERFILE.read_text()
    assert f"python3 -m venv {venv}" in dockerfile and f"{venv}/bin/aiperf --help" in dockerfile
    assert "ARG AIPERF=aiperf==" in dockerfile
    mounted = {m["mountPath"] for m in tune["volumeMounts"]}
    assert not any(venv == path or venv.startswith(path + "/") for path in mounted), "a volume would hide it"
    docs = documents(K8S_DIR / "tune-job.yaml")
    (policy,) = by_kind(docs, "NetworkPolicy")
    assert policy["spec"]["podSelector"]["matchLabels"] == job_labels(docs)
    assert sorted(policy["spec"]["policyTypes"]) == ["Egress", "Ingress"]
    assert "egress" not in policy["spec"] and "ingress" not in policy["spec"]


def job_labels(docs):
    return by_kind(docs, "Job")[0]["spec"]["template"]["metadata"]["labels"]
