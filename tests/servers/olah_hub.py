"""olah (PyPI, 0.5.4): a Hugging Face Hub server that nobody here wrote, serving local git repositories.

It answers hf:// fetches the way a Hub mirror does, branches, tags and commits included, so the fetcher is
tested against a server whose behaviour was not written from our client's requests. It needs a newer
FastAPI than vLLM, hence a virtualenv of its own: OLAH_BIN names its olah-cli, else `.venv-olah` in the
checkout is used, created on first use (`make olah-venv` does the same).

A repository is a git work tree at MIRRORS/models/ORG/NAME with a branch `main`; a file of at least
LFS_MIN bytes is committed as a git-lfs pointer, its bytes stored under .git/lfs/objects/ where olah reads them.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OLAH = "olah==0.5.4"
LFS_MIN = 1024
READY_TIMEOUT_S = 60.0
INSTALL_TIMEOUT_S = 900
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@localhost",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@localhost",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def olah_bin() -> Path:
    """OLAH_BIN, or the checkout's .venv-olah (made here under a lock when missing, as `make olah-venv` does)."""
    given = os.environ.get("OLAH_BIN")
    if given:
        return Path(given)
    venv = REPO / ".venv-olah"
    cli = venv / "bin" / "olah-cli"
    with open(os.environ.get("OLAH_LOCK", "/tmp/olah-venv.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not cli.exists():
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True, timeout=120)
            subprocess.run([str(venv / "bin" / "pip"), "install", "-q", OLAH], check=True, timeout=INSTALL_TIMEOUT_S)
    return cli


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, env={**os.environ, **_GIT_ENV}, capture_output=True, text=True, timeout=60
    )
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout.strip()


class MirrorRepo:
    """One repository olah serves; each commit replaces the whole tree with the files given."""

    def __init__(self, root: Path, name: str) -> None:
        self.name = name
        self.path = root / "models" / name
        self.path.mkdir(parents=True)
        _git(self.path, "init", "-q", "-b", "main")

    def commit(self, files: dict[str, bytes], branch: str = "main") -> str:
        if branch != self.branch():
            _git(self.path, "checkout", "-q", "-B", branch)
        for old in _git(self.path, "ls-files").splitlines():
            (self.path / old).unlink()
        for rel, data in files.items():
            target = self.path / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(self._lfs_pointer(data) if len(data) >= LFS_MIN else data)
        _git(self.path, "add", "-A")
        _git(self.path, "commit", "-q", "--allow-empty", "-m", f"{len(files)} files")
        return _git(self.path, "rev-parse", "HEAD")

    def tag(self, name: str, commit: str) -> None:
        _git(self.path, "tag", name, commit)

    def branch(self) -> str:
        return _git(self.path, "symbolic-ref", "--short", "HEAD")

    def _lfs_pointer(self, data: bytes) -> bytes:
        oid = hashlib.sha256(data).hexdigest()
        store = self.path / ".git" / "lfs" / "objects" / oid[:2] / oid[2:4]
        store.mkdir(parents=True, exist_ok=True)
        (store / oid).write_bytes(data)
        return f"version https://git-lfs.github.com/spec/v1\noid sha256:{oid}\nsize {len(data)}\n".encode()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class OlahHub:
    """olah-cli on a loopback port, offline, serving the repositories under `workdir`/mirrors."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.mirrors = workdir / "mirrors"
        self.mirrors.mkdir(parents=True, exist_ok=True)
        self.port = 0
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def repo(self, name: str) -> MirrorRepo:
        return MirrorRepo(self.mirrors, name)

    def start(self) -> "OlahHub":
        self.port = _free_port()
        config = self.workdir / f"olah-{self.port}.toml"
        netloc = f"127.0.0.1:{self.port}"
        config.write_text(
            f'[basic]\nhost = "127.0.0.1"\nport = {self.port}\nrepos-path = "{self.workdir / "repos"}"\n'
            f'mirrors-path = ["{self.mirrors}"]\nmirror-scheme = "http"\nmirror-netloc = "{netloc}"\n'
            f'mirror-lfs-netloc = "{netloc}"\n[accessibility]\noffline = true\n'
        )
        log = open(self.workdir / f"olah-{self.port}.log", "wb")
        self.proc = subprocess.Popen(
            [str(olah_bin()), "-c", str(config)],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=self.workdir,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"olah exited with {self.proc.returncode}: {self.log_tail()}")
            try:
                urllib.request.urlopen(f"{self.url}/api/models/none/none/revision/main", timeout=2)
                return self
            except urllib.error.HTTPError:
                return self  # it answers: ready
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"olah not ready on {self.url} after {READY_TIMEOUT_S:.0f}s: {self.log_tail()}")

    def stop(self, kill: bool = False) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, 9 if kill else 15)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, 9)
            self.proc.wait(timeout=15)

    def log_tail(self) -> str:
        logs = sorted(self.workdir.glob("olah-*.log"), key=lambda p: p.stat().st_mtime)
        return logs[-1].read_text(errors="replace")[-2000:] if logs else ""
