"""The Deployment's server container as a locked-down cluster runs it: root file system read-only, writable
only the volumes the manifest mounts, an arbitrary UID in group 0 plus the pod's fsGroup. The real launcher
and vLLM server on the CPU (torch.compile included, whose caches are the usual casualty), in a mount
namespace of its own (`unshare -m`, so root is needed): / is remounted read-only and each of the `nim`
container's mounts is a fresh folder with the owner and mode the kubelet gives it. The demo model stands in
for the ConfigMap's, mounted read-only as the air-gapped manifest mounts its own. The process keeps one
capability, to read (never write) the host's Python under /root, which is not world-readable here.

It serves a completion and stops cleanly on SIGTERM, its log shows no write refused anywhere, and vLLM's
compile cache lands on the cache volume."""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from k8s_manifests import K8S_DIR, by_kind, container_env, container_named, documents
from test_k8s_locked_down import image_home

from vllm_runs import make_demo_model

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
ANY_UID, FS_GROUP = 123456, 1000
READY_DEADLINE_S = float(os.environ.get("E2E_READY_DEADLINE_S", "420"))
# What a write refused looks like, from Python, torch, Triton or vLLM.
REFUSED = ("Read-only file system", "Permission denied", "not writable", "EROFS", "EACCES")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(url: str, body: dict | None = None, timeout: float = 10) -> tuple[int, bytes]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()
    except OSError:
        return 0, b""


def _mount_script(pod: dict, container: dict, volumes_dir: Path, model: Path) -> str:
    """Shell lines that build the pod's file system view, then make everything else read-only."""
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    lines = ["set -eu", "mount --make-rprivate /", "mount -t tmpfs -o mode=0755 tmpfs /opt", "mkdir -p /opt/models"]
    lines += ["mkdir -p /opt/models/target", f"mount --bind {model} /opt/models/target"]

    def order(mount: dict) -> tuple[bool, int]:
        # Parents first; a mount over the folders the others come from (/tmp here) after all of them.
        covers_sources = str(volumes_dir).startswith(mount["mountPath"].rstrip("/") + "/")
        return covers_sources, mount["mountPath"].count("/")

    # The checkout and its venv, where a mount would hide them (a checkout under /tmp): kept aside in /opt, then
    # bound back over the mount, as an image has its Python outside every volume.
    mounted = [m["mountPath"].rstrip("/") + "/" for m in container["volumeMounts"]]
    hidden = sorted({p for p in (REPO, Path(sys.prefix)) if any(str(p).startswith(m) for m in mounted)})
    for i, path in enumerate(hidden):
        lines += [f"mkdir -p /opt/.host/{i}", f"mount --rbind {shlex.quote(str(path))} /opt/.host/{i}"]
    for mount in sorted(container["volumeMounts"], key=order):
        path, volume = mount["mountPath"], volumes[mount["name"]]
        if volume.get("emptyDir", {}).get("medium") == "Memory":
            lines.append(f"mount -t tmpfs -o mode=1777 tmpfs {path}")
            continue
        source = volumes_dir / mount["name"]
        source.mkdir()
        if "persistentVolumeClaim" in volume:  # the kubelet gives it to fsGroup, group-writable, setgid
            os.chown(source, 0, FS_GROUP)
            source.chmod(0o2775)
        else:  # an emptyDir: root's, open to all
            source.chmod(0o777)
        lines += [f"mkdir -p {path}", f"mount --bind {source} {path}"]
    for i, path in enumerate(hidden):
        lines += [f"mkdir -p {shlex.quote(str(path))}", f"mount --rbind /opt/.host/{i} {shlex.quote(str(path))}"]
    lines += [
        "mount -o remount,bind,ro /opt/models/target",
        "mount -o remount,ro /opt",
        "mount -o remount,bind,ro /",
    ]
    return "\n".join(lines)


def test_the_server_runs_on_a_read_only_root_as_any_uid(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.fail("needs root for a mount namespace (unshare -m), as `make image-test` does")
    docs = documents(K8S_DIR / "deployment.yaml")
    pod = by_kind(docs, "Deployment")[0]["spec"]["template"]["spec"]
    nim = container_named(pod, "nim")
    assert nim["securityContext"]["readOnlyRootFilesystem"] is True
    model = make_demo_model(tmp_path / "demo") / "target"
    model.chmod(0o755)
    for path in model.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    volumes_dir = tmp_path / "volumes"
    volumes_dir.mkdir()
    tmp_path.chmod(0o755)

    port = _free_port()
    env = {k: v for k, v in container_env(nim, docs).items() if k not in ("HF_TOKEN", "NGC_API_KEY", "NIM_MODEL_NAME")}
    env.update(
        HOME=image_home(),
        PATH=os.environ["PATH"],
        PYTHONPATH=str(REPO / "src"),
        NIM_MODEL_PATH="/opt/models/target",
        NIM_SERVED_MODEL_NAME="demo",
        NIM_SERVER_PORT=str(port),
        HF_HUB_OFFLINE="1",
        VLLM_CPU_KVCACHE_SPACE="1",
    )
    small = ["--max-model-len", "384", "--max-num-seqs", "2"]
    serve = [sys.executable, "-m", "nim_specdec", "serve", *nim["args"], *small]
    as_any_uid = (
        f"exec setpriv --reuid {ANY_UID} --regid 0 --groups {FS_GROUP} --no-new-privs --inh-caps +dac_read_search "
        f"--ambient-caps +dac_read_search -- {shlex.join(serve)}"
    )
    script = _mount_script(pod, nim, volumes_dir, model) + "\ncd " + image_home() + "\n" + as_any_uid
    log = tmp_path / "server.log"
    with log.open("w") as out:
        server = subprocess.Popen(["unshare", "-m", "sh", "-c", script], env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + READY_DEADLINE_S
        status = 0
        while time.monotonic() < deadline and server.poll() is None and status != 200:
            time.sleep(2)
            status, _ = _get(f"http://127.0.0.1:{port}/v1/health/ready")
        assert status == 200, f"not ready (exit {server.poll()}):\n{log.read_text(errors='replace')[-4000:]}"
        body = {"model": "demo", "prompt": "hello world hello", "max_tokens": 8, "temperature": 0}
        status, answer = _get(f"http://127.0.0.1:{port}/v1/completions", body, timeout=120)
        assert status == 200 and json.loads(answer)["choices"][0]["text"], answer[:500]
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            code = server.wait(timeout=90)
        except subprocess.TimeoutExpired:
            server.kill()
            code = server.wait(timeout=30)
    text = log.read_text(errors="replace")
    assert code == 0, text[-3000:]
    refused = [line for line in text.splitlines() if any(word in line for word in REFUSED)]
    assert not refused, "\n".join(refused[:10])
    compiled = [p for p in (volumes_dir / "cache" / "compile").rglob("*") if p.is_file()]
    assert any("/vllm/" in str(p) for p in compiled), "vLLM's compile cache is on the cache volume"
