"""The target as a local directory: given as one, or materialized from any source NIM_MODEL_PATH takes
(ngc://, hf://, s3://, gs://) by the launcher's own prepare step, into the cache, verified and linked."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

from nim_specdec.config import variables as var
from nim_specdec.errors import MaterializeError


def local_target(source: str | None) -> Path | None:
    if source is None:
        return None
    path = Path(source)
    return path.absolute() if "://" not in source and path.is_dir() else None


def materialize_target(source: str | None, environ: Mapping[str, str]) -> Path:
    """The target's local directory; what `nim-specdec prepare` would download, downloaded the same way.
    `source` None: the target the environment's NIM_* variables name (NIM_MODEL_PATH or NIM_MODEL_NAME)."""
    local = local_target(source)
    if local is not None:
        return local
    from nim_specdec.cli.cmd_serve import launcher_log  # noqa: PLC0415 - only for a remote target
    from nim_specdec.config.settings import parse_settings  # noqa: PLC0415 - only for a remote target
    from nim_specdec.launch.pipeline import prepare  # noqa: PLC0415 - only for a remote target
    from nim_specdec.launch.resolve import public  # noqa: PLC0415 - only for a remote target

    env = {k: v for k, v in environ.items() if k not in (var.DRAFT_MODEL_PATH, var.SPECDEC_ARGS)}
    if source is not None:
        env[var.MODEL_PATH] = source
    env[var.SPECDEC_ENABLE] = "0"
    settings = parse_settings(env)
    plan = prepare(settings, [], launcher_log(settings))
    target = public(plan, settings.host.secrets)["target"]
    found = target.get("local_dir") or target.get("model")
    if not found or not os.path.isdir(found):
        raise MaterializeError(
            "--target",
            f"{source or 'the configured model'} was prepared but no local directory came of it",
            "check the source",
        )
    return Path(found)


def target_words(source: str | None, environ: Mapping[str, str]) -> str:
    """How the serve line names the target: as given, else as the environment names it."""
    if source is not None:
        return f"{var.MODEL_PATH}={source}"
    for name in (var.MODEL_PATH, var.MODEL_NAME):
        if environ.get(name):
            return f"{name}={environ[name]}"
    return ""
