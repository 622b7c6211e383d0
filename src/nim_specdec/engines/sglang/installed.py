"""Whether SGLang can be served here, and with which interpreter: `serve` with NIM_ENGINE=sglang execs
`python -m sglang.launch_server` where SGLang is installed and refuses in one line where it is not.

serve_python is the pure decision over what the shell found (installed_release reads the interpreter's package
metadata: no import of SGLang, microseconds).
"""

from __future__ import annotations

import sys
from pathlib import Path

from nim_specdec.config.variables import ENGINE
from nim_specdec.engines.protocol.engine import Installation
from nim_specdec.engines.sglang.options import RELEASE
from nim_specdec.errors import ConfigError

SERIES = ".".join(RELEASE.split(".")[:2])  # "0.5": the series the launcher writes commands for


def installed_release() -> str | None:
    """The SGLang release installed beside this interpreter, None when there is none (the shell's one look)."""
    from importlib import metadata  # noqa: PLC0415 - +48 modules (~20 ms): only where SGLang is asked for

    try:
        return metadata.version("sglang")
    except metadata.PackageNotFoundError:
        return None


def release_beside(python: str) -> str | None:
    """The SGLang release installed for the interpreter `python` (shell): this one's from its package metadata,
    another's from the metadata folder in its environment's site-packages, without running it."""
    if python == sys.executable:
        return installed_release()
    found = sorted(Path(python).parent.parent.glob("lib/python3*/site-packages/sglang-*.dist-info"))
    versions = [entry.name[len("sglang-") : -len(".dist-info")] for entry in found]
    return next((version for version in versions if version[:1].isdigit()), None)


def installation(python: str | None) -> Installation:
    """SGLang as this machine has it (shell): beside `python` (SGLANG_PYTHON), else beside this interpreter."""
    python = python or sys.executable
    release = release_beside(python)
    return Installation("sglang" if release else None, release or "", python)


def serve_python(python: str, release: str | None) -> str:
    """The interpreter that execs SGLang's server (this one, where SGLang is installed), or the one-line refusal."""
    if release is None:
        raise ConfigError(
            ENGINE,
            f"sglang is selected but SGLang is not installed beside {python}",
            f"use an image with SGLang {SERIES} installed, or set {ENGINE}=vllm",
        )
    if ".".join(release.split("+")[0].split(".")[:2]) != SERIES:
        raise ConfigError(
            ENGINE,
            f"sglang is selected but the installed SGLang is {release[:40]!r}",
            f"use an image with SGLang {SERIES} (commands are written and checked for {RELEASE}), or set {ENGINE}=vllm",
        )
    return python
