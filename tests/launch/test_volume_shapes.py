"""`nim-specdec prepare` on the four shapes of cache volume clusters make (files/volume.py), run as the image's
user and as an arbitrary UID (OpenShift's), each start a separate process as each pod is: (a) root-owned 0777
without the sticky bit, (b) the same with it, (c) the pod's fsGroup applied (group-owned, setgid,
group-writable), (d) SMB without mount options (every entry root's and 0777, chmod doing nothing: smb_view.py
gives the real launcher that view of a real folder). (b) and (c) serve, and a second pod reuses the first one's
download; (a) and (d) are refused in one line, exit 3, unless NIM_CACHE_TRUST_SHARED=1 vouches for the volume,
which serves with one warning at every start.

The target comes from an s3 store (moto on loopback) into the cache; the draft is a local folder, linked by
`prepare` into the default workspace under the cache. Root is needed to run as other UIDs: each start runs in
its own mount namespace (`unshare -m`) where a folder this UID cannot enter on the way to the interpreter is
made enterable, then drops to the pod's UID and groups with `setpriv`.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from servers.harness import SRC, TINY_LLAMA_CONFIG, WEIGHTS, cli_env, model_files
from servers.s3_store import S3Store

ROOT = os.geteuid() == 0 and shutil.which("unshare") is not None and shutil.which("setpriv") is not None
pytestmark = pytest.mark.skipif(not ROOT, reason="runs the launcher as other UIDs: needs root, unshare, setpriv")

SMB_VIEW = Path(__file__).with_name("smb_view.py")
DRAFT_MODEL = {"method": "draft_model", "model": "my_draft", "num_speculative_tokens": 2}
OPT_IN = "NIM_CACHE_TRUST_SHARED"


@dataclass(frozen=True)
class Pod:
    """Who the pod's processes are: the image's user (UID 1000, group 0) with the manifests' fsGroup 1000, or
    an OpenShift project's UID and fsGroup (also in group 0)."""

    name: str
    uid: int
    fs_group: int


IMAGE_USER = Pod("image-user", 1000, 1000)
ARBITRARY = Pod("arbitrary-uid", 1000680000, 1000680000)


@dataclass(frozen=True)
class Shape:
    name: str
    mode: int
    group_is_fs_group: bool = False
    smb: bool = False
    provable: bool = True  # trust can be proven from the volume's owners and modes


SHAPES = [
    Shape("a-root-0777-no-sticky", 0o777, provable=False),
    Shape("b-root-1777-sticky", 0o1777),
    Shape("c-fsgroup-2775", 0o2775, group_is_fs_group=True),
    Shape("d-smb-root-0777-chmod-ignored", 0o777, smb=True, provable=False),
]


def _blocked_ancestor(path: Path) -> tuple[Path, Path] | None:
    """(a folder others cannot enter on the way to `path`, the next folder below it), or None."""
    parts = path.resolve().parents
    for above, below in zip(parts[1:], parts):
        if not os.stat(above).st_mode & stat.S_IXOTH:
            return above, below
    return None


def _as_pod(pod: Pod, argv: list[str], keep: Path) -> list[str]:
    """`argv` run as the pod's UID, group 0 and fsGroup, in a mount namespace of its own where the
    interpreter's folders can be entered (a tmpfs over the one that cannot, the folder below bound back)."""
    script = ""
    blocked = _blocked_ancestor(Path(sys.executable).resolve())
    if blocked:
        above, below = blocked
        script = (
            f"mount --bind {below} {keep} && mount -t tmpfs -o mode=0755 none {above} && "
            f"mkdir -p {below} && mount --bind {keep} {below} && "
        )
    drop = f"setpriv --reuid={pod.uid} --regid=0 --groups={pod.fs_group} --inh-caps=-all --"
    return ["unshare", "-m", "sh", "-c", script + f'exec {drop} "$@"', "sh", *argv]


@pytest.fixture(scope="module")
def store():
    store = S3Store().start()
    yield store
    store.close()


@pytest.fixture
def site(tmp_path_factory):
    """A folder every UID can enter (the test's own temporary folders are root's, 0700)."""
    base = Path(tempfile.mkdtemp(prefix="nim-volume-", dir="/tmp"))
    os.chmod(base, 0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def _make_volume(site: Path, shape: Shape, pod: Pod) -> Path:
    volume = site / "volume"
    volume.mkdir()
    os.chown(volume, 0, pod.fs_group if shape.group_is_fs_group else 0)
    os.chmod(volume, shape.mode)
    return volume


def _draft(site: Path) -> Path:
    draft = site / "draft"
    draft.mkdir()
    (draft / "config.json").write_text(json.dumps(TINY_LLAMA_CONFIG))
    (draft / WEIGHTS).write_bytes(b"\0" * 64)
    for path in (draft, *draft.iterdir()):
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    return draft


def _start(store, site: Path, volume: Path, shape: Shape, pod: Pod, target: str, *command: str, **extra: str):
    """One pod's start as the pod's user, its HOME its own: `prepare` (what `serve` does before vLLM starts), or
    `command` (the manifests' prefetch, `download-to-cache`)."""
    home = Path(tempfile.mkdtemp(prefix="home-", dir=site))
    os.chown(home, pod.uid, 0)
    keep = Path(tempfile.mkdtemp(prefix="keep-", dir=site))
    env = cli_env(store, volume, HOME=str(home), NIM_MODEL_PATH=target, NIM_SPECDEC_PREFLIGHT="off", **extra)
    env.update(NIM_DRAFT_MODEL_PATH=str(site / "draft"), PYTHONPATH=f"{SRC}{os.pathsep}{env['PYTHONPATH']}")
    env.pop("NIM_WORKSPACE", None)
    launcher = [sys.executable, str(SMB_VIEW), str(volume)] if shape.smb else [sys.executable, "-m", "nim_specdec"]
    argv = [*launcher, *(command or ("prepare", "--speculative-config", json.dumps(DRAFT_MODEL)))]
    return subprocess.run(_as_pod(pod, argv, keep), env=env, capture_output=True, text=True, timeout=300, cwd=str(home))


def _weight_gets(store) -> int:
    return len(store.proxy.requests("GET", WEIGHTS))


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("nim-specdec: error:")]


def _warnings_naming_opt_in(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("WARNING") and OPT_IN in line]


CASES = [(shape, pod) for shape in SHAPES for pod in (IMAGE_USER, ARBITRARY)]


@pytest.mark.parametrize("shape,pod", CASES, ids=[f"{s.name}-{p.name}" for s, p in CASES])
def test_each_volume_shape_as_each_pod_user(store, site, shape, pod):
    """The arbitrary UID's first pod runs `prepare` (the draft linked into the workspace on the volume, vLLM's
    check); the image user's runs the prefetch, which judges the volume by the same rule in seconds."""
    volume = _make_volume(site, shape, pod)
    _draft(site)
    target = store.publish(
        f"t{uuid.uuid4().hex[:8]}", {**model_files(4096), "config.json": json.dumps(TINY_LLAMA_CONFIG).encode()}
    )
    before = _weight_gets(store)
    command = () if pod is ARBITRARY else ("download-to-cache",)
    first = _start(store, site, volume, shape, pod, target, *command)
    if not shape.provable:
        # Refused before anything is written: one line, exit 3, the volume's problem and the fixes a cluster has.
        assert first.returncode == 3, first.stderr
        (line,) = _errors(first.stderr)
        assert f"refusing {volume}" in line and "no sticky bit" in line, line
        for fix in ("chmod +t", "mount it with the driver's options uid=", "dir_mode=", "access point", f"{OPT_IN}=1"):
            assert fix in line, (fix, line)
        assert sorted(os.listdir(volume)) == [] and _weight_gets(store) == before
        first = _start(store, site, volume, shape, pod, target, *command, **{OPT_IN: "1"})
    assert first.returncode == 0, first.stderr
    assert _weight_gets(store) == before + 1, first.stderr  # the first pod downloaded the target
    assert os.stat(volume / "sources").st_uid == pod.uid
    if command:
        local_dir = first.stdout.splitlines()[0]
    else:
        plan = json.loads(first.stdout)
        workspace = Path(plan["workspace"])
        assert workspace.parent == volume and (workspace / "my_draft").resolve() == (site / "draft").resolve()
        local_dir = plan["target"]["local_dir"]
    assert Path(local_dir).resolve().is_relative_to(volume / "sources" / "entries"), local_dir
    # A second pod (another process, the same UID, as the manifests and OpenShift's SCC give every replica); its
    # prefetch (`download-to-cache`, no vLLM import: seconds, not the half minute of prepare's vLLM check).
    opt_in = {} if shape.provable else {OPT_IN: "1"}
    second = _start(store, site, volume, shape, pod, target, "download-to-cache", **opt_in)
    assert second.returncode == 0, second.stderr
    assert _weight_gets(store) == before + 1, second.stderr  # reused, not downloaded again
    assert local_dir in second.stdout.splitlines(), second.stdout
    for start in (first, second):
        # Vouched for: one warning at every start, naming the variable; never silent. Proven: no warning.
        assert len(_warnings_naming_opt_in(start.stderr)) == (0 if shape.provable else 1), start.stderr
