"""Optional fast path for s3://: the s5cmd binary (Go, parallel ranged downloads) when installed.

Enabled with NIM_S5CMD=1. The object list still comes from boto3 (names checked, sizes and ETags
recorded); s5cmd gets one explicit `cp` per object, so it writes only the checked target paths.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

from nim_specdec.errors import MaterializeError
from nim_specdec.fetchers.materialize import Job, RemoteFile
from nim_specdec.fetchers.progress import DirectoryWatch
from nim_specdec.fetchers.safety import target_path

# Only what s5cmd needs from the environment: credentials stay in its environment, never on its command line.
_PASS = ("PATH", "HOME", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
         "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE",
         "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_CA_BUNDLE")


def s5cmd_commands(bucket: str, prefix: str, files: list[RemoteFile], dest) -> list[str]:
    lines = []
    for f in files:
        key = f"{prefix}/{f.name}" if prefix else f.name
        lines.append(f'cp "s3://{bucket}/{key}" "{dest / f.name}"')
    return lines


def download_with_s5cmd(job: Job, files: list[RemoteFile]) -> None:
    from nim_specdec.fetchers.s3 import endpoint_url, split_location

    bucket, prefix = split_location(job.ref.location)
    for f in files:
        target_path(job.uri, job.dest, f.name).parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    cmd = [shutil.which("s5cmd") or "s5cmd", "--numworkers", str(job.settings.concurrency), "--retry-count", "3"]
    if endpoint_url(job.env):
        cmd += ["--endpoint-url", endpoint_url(job.env)]
    if job.settings.s3_anonymous:
        cmd.append("--no-sign-request")
    env = {k: v for k, v in job.env.items() if k in _PASS}
    env.setdefault("AWS_REGION", "us-east-1")
    with tempfile.NamedTemporaryFile("w", suffix=".s5cmd", dir=job.dest.parent, delete=False) as fh:
        fh.write("\n".join(s5cmd_commands(bucket, prefix, files, job.dest)) + "\n")
        script = fh.name
    try:
        with DirectoryWatch(job.dest, job.progress):
            proc = subprocess.run(cmd + ["run", script], env=env, capture_output=True, text=True)
    finally:
        os.unlink(script)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no message"])[-1]
        raise MaterializeError(job.uri, f"s5cmd failed (exit {proc.returncode}): {last[:300]}",
                               "unset NIM_S5CMD to use the built-in downloader")
