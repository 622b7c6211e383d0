"""Command-line entry: one subcommand per module, each exposing `register` and `run`.

Subcommand modules are imported lazily so that `serve` and `plan` never pay for the
imports of `report`, `bench` or the download backends.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
from importlib.util import find_spec
from typing import Sequence

from nim_specdec.config.settings import ignored_or_refused
from nim_specdec.errors import EXIT_CONFIG, EXIT_INTERNAL, LauncherError, Terminated
from nim_specdec.text.redact import secret_values

# (name, module, one-line help). The module defines run(args) -> int, and add_arguments(parser) unless
# its arguments all go to vLLM (PASSTHROUGH).
LAUNCHER_SUBCOMMANDS: tuple[tuple[str, str, str], ...] = (
    ("serve", "nim_specdec.cli.cmd_serve", "resolve the configuration, materialize the draft, exec the vLLM server"),
    (
        "plan",
        "nim_specdec.cli.cmd_plan",
        "print what serve would do, as JSON, without downloading or starting anything",
    ),
    ("prepare", "nim_specdec.cli.cmd_prepare", "download and link the target and draft as serve would, then stop"),
    ("report", "nim_specdec.cli.cmd_report", "acceptance rate and length from /v1/metrics or an AIPerf export"),
    ("download", "nim_specdec.cli.cmd_download", "pre-fetch model or draft sources into the cache (NIM_CACHE_PATH)"),
    (
        "download-to-cache",
        "nim_specdec.cli.cmd_download_to_cache",
        "NIM's name for `download`; without URIs, the target and draft the NIM_* variables name",
    ),
    (
        "cache",
        "nim_specdec.cli.cmd_cache",
        "inspect the download cache (`cache ls`); remove old compile caches (`cache prune`)",
    ),
)

# The lab's subcommands live in the package nim_specdec_lab, installed with the `lab` extra. They are named
# here, never imported, so that the launcher's start path cannot reach the lab.
LAB_SUBCOMMANDS: tuple[tuple[str, str, str], ...] = (
    (
        "demo-model",
        "nim_specdec_lab.cli.cmd_demo_model",
        "write a tiny offline demo model (target and drafts) into a directory",
    ),
    (
        "simulate",
        "nim_specdec_lab.cli.cmd_simulate",
        "predict n-gram and suffix speculation on captured traffic and recommend a setting",
    ),
    (
        "tune-ngram",
        "nim_specdec_lab.cli.cmd_tune_ngram",
        "alias of `simulate --method ngram` with flags --k, --min, --max",
    ),
    ("bench", "nim_specdec_lab.cli.cmd_bench", "measure speculation on vs off over a trace or SPEED-Bench with AIPerf"),
    (
        "tune",
        "nim_specdec_lab.cli.cmd_tune",
        "measure, model and choose speculation per batch size on your traffic and hardware",
    ),
    (
        "draft",
        "nim_specdec_lab.cli.cmd_draft",
        "train an EAGLE3 draft on captured traffic (`draft train`), check it, measure it on held-out requests",
    ),
    (
        "alert-rules",
        "nim_specdec_lab.cli.cmd_alert_rules",
        "Prometheus alerts for a served model from tune.json: acceptance below tune's, drafts stopped, off",
    ),
)

# What the `lab` extra brings: the lab counts as installed when its package and these are importable.
LAB_PACKAGE = "nim_specdec_lab"
LAB_REQUIREMENTS = ("numpy",)
LAB_MISSING = "{name}: the lab is not installed; install it with pip install 'nim-specdec[lab]' (the image has it)"


def lab_installed() -> bool:
    try:
        return all(find_spec(name) is not None for name in (LAB_PACKAGE, *LAB_REQUIREMENTS))
    except (ImportError, ValueError):  # a module set to None in sys.modules, or a broken finder
        return False


def subcommands() -> tuple[tuple[str, str, str], ...]:
    return LAUNCHER_SUBCOMMANDS + (LAB_SUBCOMMANDS if lab_installed() else ())


SUBCOMMANDS = LAUNCHER_SUBCOMMANDS + LAB_SUBCOMMANDS

# Subcommands whose trailing arguments belong to vLLM and must reach it untouched.
PASSTHROUGH = {"serve", "plan", "prepare"}


class _OneLineParser(argparse.ArgumentParser):
    """argparse prints its usage block before a usage error: several lines, where a log collector sees each as
    a record of its own. Here the error is one line naming the command and where its help is."""

    def error(self, message: str):  # type: ignore[override]
        error_line(f"{self.prog}: error: {message}; see {self.prog} --help")
        raise SystemExit(EXIT_CONFIG)


# The commands that download; SIGTERM during any other has nothing to remove.
_DOWNLOADING = {"serve", "prepare", "download", "download-to-cache"}


def _parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; with `only`, the arguments of that subcommand alone (the others are named,
    not imported: `tune --decide` need not load the simulators another subcommand brings)."""
    parser = _OneLineParser(
        prog="nim-specdec",
        description="Serve an LLM through vLLM with speculative decoding configured from NIM_* variables.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module, help_text in subcommands():
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(_module=module)
        if name in PASSTHROUGH:
            p.add_argument("vllm_args", nargs=argparse.REMAINDER, help="arguments passed on to vLLM")
        elif only is None or name == only:
            importlib.import_module(module).add_arguments(p)
    return parser


_HELP_FLAGS = ("-h", "--help")

_PASSTHROUGH_HELP = """usage: nim-specdec {name} [VLLM ARGS...]

{help}.

Configured by NIM_* variables (NIM_MODEL_PATH or NIM_MODEL_NAME, NIM_SPECDEC_ENABLE, NIM_SPECDEC_ARGS,
NIM_DRAFT_MODEL_PATH, NIM_CACHE_PATH, ...; see docs/configuration.md). Every argument after `{name}` is a vLLM
engine argument and wins over the variables; `nim-specdec plan ARGS` shows the resolved command.
vLLM's own options: `vllm serve --help` (or `python -m vllm.entrypoints.openai.api_server --help`).
"""


def _passthrough_help(name: str) -> str:
    return _PASSTHROUGH_HELP.format(name=name, help=dict((n, h) for n, _, h in SUBCOMMANDS)[name])


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:
        # The reader went away (`nim-specdec plan | head`): stop quietly, as Unix tools do. Python would
        # report the failed flush of stdout at exit, so stdout is pointed at /dev/null first.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141  # 128 + SIGPIPE: what a shell reports for a tool a closed pipe stopped


def _main(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in PASSTHROUGH and argv[1:2] and argv[1] in _HELP_FLAGS:
        sys.stdout.write(_passthrough_help(argv[0]))
        return 0
    if argv and argv[0] in PASSTHROUGH:
        # argparse would try to read vLLM's options as ours; hand them over verbatim instead. Building
        # the full parser would also import every other subcommand: start-up time that serve never needs.
        module = dict((n, m) for n, m, _ in SUBCOMMANDS)[argv[0]]
        args = argparse.Namespace(command=argv[0], _module=module, vllm_args=argv[1:])
    else:
        if argv and argv[0] in {name for name, _, _ in LAB_SUBCOMMANDS} and not lab_installed():
            error_line(f"nim-specdec: error: {LAB_MISSING.format(name=argv[0])}")
            return EXIT_CONFIG
        modules = {name: module for name, module, _ in SUBCOMMANDS}
        if argv and argv[0] in modules:
            # A subcommand may normalise its own arguments first (bench: `--extra --flag`).
            rewrite = getattr(importlib.import_module(modules[argv[0]]), "rewrite_argv", None)
            argv = [argv[0], *rewrite(argv[1:])] if rewrite else argv
        args = _parser(argv[0] if argv and argv[0] in modules else None).parse_args(argv)
    if not getattr(args, "_module", None):
        _parser().print_help()
        return 2
    # exec (serve) gives vLLM the default action back; only the main thread may set a handler
    previous = (
        signal.signal(signal.SIGTERM, _terminated) if threading.current_thread() is threading.main_thread() else None
    )
    try:
        if args.command in {name for name, _, _ in LAB_SUBCOMMANDS}:
            ignored_or_refused(os.environ)  # the lab reads NIM_* variables too: NIM_STRICT_VARIABLES holds there
        return importlib.import_module(args._module).run(args)
    except Terminated:
        stopped = "; a download under way resumes from its verified files at the next start"
        error_line(f"nim-specdec {args.command}: stopped by SIGTERM{stopped if args.command in _DOWNLOADING else ''}")
        return 128 + signal.SIGTERM
    except LauncherError as err:
        error_line(f"nim-specdec: error: {err.one_line()}")
        return err.exit_code
    except BrokenPipeError:
        raise
    except KeyboardInterrupt:
        return 130
    except Exception as err:  # noqa: BLE001 - last line of defence: never a traceback
        error_line(f"nim-specdec: internal error: {type(err).__name__}: {' '.join(str(err).split())[:500]}")
        return EXIT_INTERNAL
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _terminated(signum: int, frame: object) -> None:
    raise Terminated()


def error_line(text: str) -> None:
    from nim_specdec.text.logs import error_line as write  # noqa: PLC0415 - an error only: logging is +4 modules on --help

    write(text, secret_values(os.environ))  # the command's edge: the environment it was started with
