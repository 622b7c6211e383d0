"""The command line vLLM's check judges: the serve arguments of the command the launcher execs, with the
workspace paths pointed at the directories that hold their config.json now, and whether that can run yet."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from nim_specdec.engines.vllm.argv.user_args import SPEC_OPTION

SERVE_MODULE_FLAG = "-m"


@dataclass(frozen=True)
class ModelFiles:
    path: str  # what the command line names (a workspace path, or the model itself)
    local_dir: str | None = None  # where its files are on this machine now, when known
    source: str | None = None  # the URI or directory it comes from


@dataclass(frozen=True)
class CheckRequest:
    """What vLLM's check judges, and what its one line needs: the unredacted command, where the files of
    the target and the draft are now, where each key came from, and the version of the vLLM that judges."""

    argv: tuple[str, ...]
    target: ModelFiles | None = None
    draft: ModelFiles | None = None
    spec_origin: Mapping[str, str] = field(default_factory=dict)
    engine_origin: Mapping[str, str] = field(default_factory=dict)
    vllm_version: str = ""


def serve_args(argv: Sequence[str]) -> list[str]:
    """The arguments vLLM's serve parser sees, from the command the launcher execs."""
    argv = list(argv)
    if SERVE_MODULE_FLAG in argv[:3]:
        return argv[argv.index(SERVE_MODULE_FLAG) + 2 :]
    if argv[1:2] == ["serve"]:
        return ["--model", argv[2], *argv[3:]] if len(argv) > 2 and not argv[2].startswith("-") else argv[2:]
    return argv[1:]


def substitute_paths(args: Sequence[str], path_map: Mapping[str, str]) -> list[str]:
    """Point the model paths of the command line at directories that hold their config.json now."""
    out = []
    for i, token in enumerate(args):
        if token in path_map:
            token = path_map[token]
        elif i > 0 and args[i - 1] in (SPEC_OPTION, "-sc") and token.startswith("{"):
            try:
                spec = json.loads(token)
            except ValueError:
                spec = None
            if isinstance(spec, dict) and spec.get("model") in path_map:
                token = json.dumps({**spec, "model": path_map[spec["model"]]}, separators=(",", ":"))
        out.append(token)
    return out


def local_paths(request: CheckRequest) -> dict[str, str]:
    """Workspace paths of the command line -> the directories holding those files now (local sources,
    or what has been downloaded); paths that already exist map to themselves and are left out."""
    out: dict[str, str] = {}
    for files in (request.target, request.draft):
        if files is None:
            continue
        source = files.source
        here = files.local_dir or (source if isinstance(source, str) and source.startswith("/") else None)
        if files.path and here and files.path != here:
            out[files.path] = here
    return out


def unavailable(request: CheckRequest, path_map: Mapping[str, str]) -> str | None:
    """Why the check cannot run yet (a model whose config.json is not on this machine), else None."""
    if not request.argv:
        return "no command line"
    for label, files in (("the target", request.target), ("the draft", request.draft)):
        if files is not None and files.path and not os.path.isdir(path_map.get(files.path, files.path)):
            return f"{label}'s config.json is not on this machine yet ({files.path})"
    return None
