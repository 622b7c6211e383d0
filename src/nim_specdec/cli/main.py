"""Command-line entry: one subcommand per module, each exposing `register` and `run`.

Subcommand modules are imported lazily so that `serve` and `plan` never pay for the
imports of `report`, `bench` or the download backends.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

from nim_specdec.errors import EXIT_INTERNAL, LauncherError

# (name, module, one-line help). The module defines add_arguments(parser) and run(args) -> int.
SUBCOMMANDS: tuple[tuple[str, str, str], ...] = (
    ("serve", "nim_specdec.cli.cmd_serve", "resolve the configuration, materialize the draft, exec the vLLM server"),
    ("plan", "nim_specdec.cli.cmd_plan", "print what serve would do, as JSON, without downloading or starting anything"),
    ("prepare", "nim_specdec.cli.cmd_prepare", "download and link the target and draft as serve would, then stop"),
    ("demo-model", "nim_specdec.cli.cmd_demo_model", "write a tiny offline demo model (target and drafts) into a directory"),
    ("report", "nim_specdec.cli.cmd_report", "acceptance rate and length from /v1/metrics or an AIPerf export"),
    ("download", "nim_specdec.cli.cmd_download", "pre-fetch model or draft sources into the cache (NIM_CACHE_PATH)"),
    ("cache", "nim_specdec.cli.cmd_cache", "inspect the download cache: `cache ls`"),
    ("tune-ngram", "nim_specdec.cli.cmd_tune_ngram", "predict n-gram speculation on captured traffic and recommend a setting"),
    ("bench", "nim_specdec.cli.cmd_bench", "measure speculation on vs off over a trace or SPEED-Bench with AIPerf"),
    ("tune", "nim_specdec.cli.cmd_tune", "measure, model and choose speculation per batch size on your traffic and hardware"),
)

# Subcommands whose trailing arguments belong to vLLM and must reach it untouched.
PASSTHROUGH = {"serve", "plan", "prepare"}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nim-specdec", description="Serve an LLM through vLLM with speculative decoding configured from NIM_* variables."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module, help_text in SUBCOMMANDS:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(_module=module)
        if name in PASSTHROUGH:
            p.add_argument("vllm_args", nargs=argparse.REMAINDER, help="arguments passed on to vLLM")
        else:
            importlib.import_module(module).add_arguments(p)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in PASSTHROUGH:
        # argparse would try to read vLLM's options as ours; hand them over verbatim instead. Building
        # the full parser would also import every other subcommand: start-up time that serve never needs.
        module = dict((n, m) for n, m, _ in SUBCOMMANDS)[argv[0]]
        args = argparse.Namespace(command=argv[0], _module=module, vllm_args=argv[1:])
    else:
        args = _parser().parse_args(argv)
    if not getattr(args, "_module", None):
        _parser().print_help()
        return 2
    try:
        return importlib.import_module(args._module).run(args)
    except LauncherError as err:
        print(f"nim-specdec: error: {err.one_line()}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        return 130
    except Exception as err:  # noqa: BLE001 - last line of defence: never a traceback
        print(f"nim-specdec: internal error: {type(err).__name__}: {err}", file=sys.stderr)
        return EXIT_INTERNAL
