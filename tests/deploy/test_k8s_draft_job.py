"""The draft-train Job trains for what the Deployment serves: same ConfigMap, same vLLM arguments, a capture on
the shared cache volume, the draft onto it; its command line is one `nim-specdec draft train` accepts; it
installs nothing and reaches no network."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from k8s_manifests import K8S_DIR, by_kind, container_env, container_named, documents

OFFLINE = {"NIM_DISABLE_MODEL_DOWNLOAD": "1", "HF_HUB_OFFLINE": "1"}
OWN = ("DRAFT_", "AIPERF_BIN")
JOB_FILE = K8S_DIR / "draft-train-job.yaml"


def _job_and_deployment():
    deploy_docs = documents(K8S_DIR / "deployment.yaml")
    job = by_kind(documents(JOB_FILE), "Job")[0]["spec"]["template"]["spec"]
    serving = by_kind(deploy_docs, "Deployment")[0]["spec"]["template"]["spec"]
    train = container_named(job, "draft-train")
    return train, container_env(train, deploy_docs), container_named(serving, "nim"), deploy_docs, job


def _argv(script: str, env: dict[str, str]) -> list[str]:
    line = script.split("exec ", 1)[1].replace("\\\n", " ")
    argv = shlex.split(" ".join(line.split("\n")))
    return [env[token.strip('"$')] if token.startswith("$") else token for token in argv]


def test_the_job_trains_for_what_the_deployment_serves():
    train, env, nim, deploy_docs, job = _job_and_deployment()
    serving_env = container_env(nim, deploy_docs)
    assert {k: v for k, v in env.items() if not k.startswith(OWN) and k not in OFFLINE} == serving_env
    assert {k: env[k] for k in OFFLINE} == OFFLINE
    argv = _argv(train["command"][2], env)
    assert argv[:3] == ["nim-specdec", "draft", "train"] and "--target" not in argv  # the served model
    assert argv[argv.index("--") + 1 :] == nim["args"]
    assert env["DRAFT_CAPTURE"] == f"{serving_env['NIM_CACHE_PATH']}/captures/payloads.jsonl"
    assert env["DRAFT_OUT"].startswith(serving_env["NIM_CACHE_PATH"] + "/")
    mounts = {m["mountPath"]: m["name"] for m in train["volumeMounts"]}
    volumes = {v["name"]: v for v in job["volumes"]}
    assert volumes[mounts[serving_env["NIM_CACHE_PATH"]]]["persistentVolumeClaim"] == {"claimName": "nim-cache"}
    assert train["resources"] == nim["resources"] and train["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert job["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert by_kind(documents(JOB_FILE), "Job")[0]["spec"]["backoffLimit"] == 0


def test_the_job_runs_locked_down_and_reaches_no_network():
    train, env, *_, job = _job_and_deployment()
    assert job["securityContext"]["runAsNonRoot"] is True and job["automountServiceAccountToken"] is False
    assert train["securityContext"]["readOnlyRootFilesystem"] is True
    assert train["securityContext"]["allowPrivilegeEscalation"] is False
    for word in ("pip", "venv", "install", "curl", "wget", "apt"):
        assert word not in train["command"][2], word
    (policy,) = by_kind(documents(JOB_FILE), "NetworkPolicy")
    assert sorted(policy["spec"]["policyTypes"]) == ["Egress", "Ingress"]
    assert "egress" not in policy["spec"] and "ingress" not in policy["spec"]


def test_the_jobs_command_line_is_accepted_by_draft_train(tmp_path: Path):
    """The Job's exact command with its environment: the options parse, the capture and the output directory
    pass, and with downloads off the served model, absent from this cache, stops it (exit 3) before any
    server, having written nothing where a server would read."""
    train, env, *_ = _job_and_deployment()
    capture = tmp_path / "payloads.jsonl"
    capture.write_text(
        "".join(
            json.dumps({"timestamp": i, "payload": {"messages": [{"role": "user", "content": f"q {i}"}]}}) + "\n"
            for i in range(40)
        )
    )
    env = {
        **env,
        "DRAFT_CAPTURE": str(capture),
        "DRAFT_OUT": str(tmp_path / "drafts" / "own"),
        "NIM_CACHE_PATH": str(tmp_path / "cache"),
        "NIM_WORKSPACE": str(tmp_path / "ws"),
    }  # noqa: E501
    argv = _argv(train["command"][2], env)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("NIM_", "NGC_", "HF_", "AWS_", "GOOGLE_"))}
    src = str(Path(__file__).resolve().parents[2] / "src")
    done = subprocess.run(
        [sys.executable, "-m", "nim_specdec", *argv[1:]],
        env={**base, **env, "PYTHONPATH": src},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 3, done.stderr
    assert "NIM_DISABLE_MODEL_DOWNLOAD" in done.stderr or "cache" in done.stderr, done.stderr
    assert not (tmp_path / "drafts" / "own" / "draft").exists()
