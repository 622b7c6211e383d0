"""A thin wrapper over the `buildah` command line, with its own storage under one folder.

Keeping the storage (vfs driver, chroot isolation) inside the build folder makes the image
test independent of the machine's container setup: no daemon, no overlay mounts, nothing
left in /var/lib/containers. Buildah's staging copies (a whole layer each, /var/tmp by
default) go there too, through TMPDIR, so the test needs free space in one place only.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence


@dataclass(frozen=True)
class Buildah:
    workdir: Path

    def _base(self) -> list[str]:
        return [
            "buildah",
            "--root",
            str(self.workdir / "storage"),
            "--runroot",
            str(self.workdir / "run"),
            "--storage-driver",
            "vfs",
        ]

    def _env(self) -> dict[str, str]:
        staging = self.workdir / "tmp"
        staging.mkdir(parents=True, exist_ok=True)
        return {**os.environ, "TMPDIR": str(staging)}

    def call(self, args: Sequence[str], timeout: float = 900) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self._base(), *args], capture_output=True, text=True, timeout=timeout, check=False, env=self._env()
        )

    def checked(self, args: Sequence[str], timeout: float = 900) -> str:
        done = self.call(args, timeout)
        if done.returncode != 0:
            raise AssertionError(
                f"buildah {' '.join(args[:2])} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"  # noqa: E501
            )
        return done.stdout

    def build(self, containerfile: Path, context: Path, tag: str, build_args: Mapping[str, str] = {}) -> float:
        """Build with the docker format (the OCI format drops HEALTHCHECK); return seconds taken."""
        args = [
            "bud",
            "--isolation",
            "chroot",
            "--format",
            "docker",
            "--layers=false",
            "-f",
            str(containerfile),
            "-t",
            tag,
        ]
        for key, value in build_args.items():
            args += ["--build-arg", f"{key}={value}"]
        start = time.monotonic()
        self.checked([*args, str(context)])
        return time.monotonic() - start

    def image_config(self, tag: str) -> dict:
        return json.loads(self.checked(["inspect", "--type", "image", tag]))

    def has_image(self, tag: str) -> bool:
        return self.call(["inspect", "--type", "image", tag]).returncode == 0

    def container(self, image: str) -> str:
        return self.checked(["from", "--pull=never", image]).strip().splitlines()[-1]

    def run(
        self, container: str, argv: Sequence[str], env: Mapping[str, str] = {}, user: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        args = ["run", "--isolation", "chroot"]
        for key, value in env.items():
            args += ["--env", f"{key}={value}"]
        if user is not None:
            args += ["--user", user]
        return self.call([*args, container, "--", *argv], timeout=300)

    def remove(self, container: str) -> None:
        self.call(["rm", container])
