"""The command that serves a trained draft, as the guide's local (air-gapped) draft example writes it."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from nim_specdec.config import variables as var

# The bare name the guide uses: the launcher links NIM_DRAFT_MODEL_PATH there and rewrites the reference.
BARE_NAME = "eagle3_draft"


def speculative_config(k: int) -> dict:
    return {"method": "eagle3", "model": BARE_NAME, "num_speculative_tokens": k}


def serve_command(target: str, draft_dir: Path, k: int) -> str:
    """`target`: NAME=VALUE of the variable that names the target (NIM_MODEL_PATH=... or NIM_MODEL_NAME=...)."""
    spec = json.dumps(speculative_config(k), separators=(", ", ": "))
    name, _, value = target.partition("=")
    named = f"{name}={shlex.quote(value)} " if name else ""
    return (
        f"{named}{var.DRAFT_MODEL_PATH}={shlex.quote(str(draft_dir))} "
        f"{var.SPECDEC_ENABLE}=1 nim-specdec serve --speculative-config {shlex.quote(spec)}"
    )
