"""The subprocess edge of a replay: find the AIPerf executable and run it, reporting while it runs."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Callable, Sequence

from nim_specdec.errors import ConfigError, LauncherError

AIPERF_VERSION = "0.13.0"
# `make aiperf-venv` puts AIPerf here; it cannot share vLLM's virtualenv (their pins conflict).
REPO_VENV = Path(".venv-aiperf") / "bin" / "aiperf"
_INSTALL_HINT = (
    f"run `make aiperf-venv` (AIPerf {AIPERF_VERSION} in its own virtualenv, ./.venv-aiperf, where it is found "
    "by default), or pass --aiperf PATH or set AIPERF_BIN"
)


def find_aiperf(explicit: str | os.PathLike | None, environ: dict[str, str] | None = None) -> str:
    """The AIPerf executable: the one given, else $AIPERF_BIN, else ./.venv-aiperf, else `aiperf` on PATH."""
    env = os.environ if environ is None else environ
    if explicit:
        where, candidates = "--aiperf", [str(explicit)]
    elif env.get("AIPERF_BIN"):
        where, candidates = "AIPERF_BIN", [env["AIPERF_BIN"]]
    else:
        where, candidates = "--aiperf", [str(REPO_VENV), "aiperf"]
    for candidate in candidates:
        found = (
            shutil.which(candidate)
            if os.sep not in candidate
            else (candidate if os.access(candidate, os.X_OK) else None)
        )
        if found:
            return str(Path(found).resolve()) if os.sep in found else found
    raise ConfigError(where, f"no AIPerf executable at {', '.join(candidates)}", _INSTALL_HINT)


# AIPerf 0.13 reads a local tokenizer directory as a Hub repo id when these are set, and fails.
_OFFLINE_VARS = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")


# AIPerf stages each run's dataset in `aiperf_mmap_<id>/` under the temp folder and leaves the emptied
# folder behind: one per run, hundreds on a machine that benchmarks all day. A run's own folder holds it.
MMAP_BASE_VAR = "AIPERF_DATASET_MMAP_BASE_PATH"


def aiperf_env(environ: dict[str, str] | None = None, scratch: Path | None = None) -> dict[str, str]:
    """The environment AIPerf runs in: ours, less the Hub's offline switches; its dataset staged under
    `scratch` unless the user chose a place."""
    env = {k: v for k, v in (os.environ if environ is None else environ).items() if k not in _OFFLINE_VARS}
    if scratch is not None:
        env.setdefault(MMAP_BASE_VAR, str(scratch))
    return env


def run_aiperf(
    argv: Sequence[str],
    log_path: Path,
    tick: Callable[[float], None] | None = None,
    tick_every_s: float = 5.0,
    timeout_s: float = 6 * 3600,
) -> None:
    """Run AIPerf with its output in `log_path`; `tick(elapsed_s)` is called every `tick_every_s` meanwhile."""
    start = time.monotonic()
    try:
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                list(argv), stdout=log, stderr=subprocess.STDOUT, env=aiperf_env(scratch=log_path.parent.resolve())
            )
            try:
                while True:
                    try:
                        code = proc.wait(timeout=tick_every_s)
                        break
                    except subprocess.TimeoutExpired:
                        elapsed = time.monotonic() - start
                        if elapsed > timeout_s:
                            proc.kill()
                            proc.wait()
                            raise LauncherError(
                                "aiperf", f"still running after {timeout_s:.0f} s", f"see {log_path}"
                            ) from None
                        if tick:
                            tick(elapsed)
            except BaseException:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
                raise
    except OSError as err:
        raise ConfigError("--aiperf", f"cannot run {argv[0]} ({err.strerror})", _INSTALL_HINT) from None
    if code != 0:
        raise ConfigError("aiperf", f"exited with {code}: {last_error(log_path)}", f"see {log_path}")


def last_error(log_path: Path) -> str:
    """The most telling line of an AIPerf log: the last one naming an error, else the last line."""
    try:
        lines = [line.strip() for line in log_path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "(no log)"
    errors = [line for line in lines if "error" in line.lower()]
    text = (errors or lines or ["(empty log)"])[-1]
    return text[:300]
