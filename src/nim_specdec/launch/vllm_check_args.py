"""The command line vLLM's check judges: the serve arguments of the command the launcher execs, with the
workspace paths pointed at the directories that hold their config.json now, and whether that can run yet."""

from __future__ import annotations

import json
import os
from typing import Any, Mapping, Sequence

from nim_specdec.config.vllm_argv import SPEC_OPTION

SERVE_MODULE_FLAG = "-m"


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


def local_paths(plan: Mapping[str, Any]) -> dict[str, str]:
    """Workspace paths of the command line -> the directories holding those files now (local sources,
    or what has been downloaded); paths that already exist map to themselves and are left out."""
    out: dict[str, str] = {}
    target, draft = plan.get("target") or {}, plan.get("draft") or {}
    for path, local, source in (
        (target.get("model"), target.get("local_dir"), target.get("source")),
        (draft.get("path"), draft.get("local_dir"), draft.get("source")),
    ):
        here = local or (source if isinstance(source, str) and source.startswith("/") else None)
        if path and here and path != here:
            out[path] = here
    return out


def unavailable(plan: Mapping[str, Any], path_map: Mapping[str, str]) -> str | None:
    """Why the check cannot run yet (a model whose config.json is not on this machine), else None."""
    if not plan.get("_argv_exec"):
        return "no command line"
    target, draft = plan.get("target") or {}, plan.get("draft") or {}
    for label, path in (("the target", target.get("model")), ("the draft", draft.get("path"))):
        if path and not os.path.isdir(path_map.get(path, path)):
            return f"{label}'s config.json is not on this machine yet ({path})"
    return None
