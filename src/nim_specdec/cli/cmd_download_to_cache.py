"""`nim-specdec download-to-cache [URI...]`: NIM's name for the pre-fetch, an alias of `download`.

With URIs it is `download`. Without, as NIM's command is used in an init container, it fetches what the
NIM_* variables name: the target (NIM_MODEL_PATH, or a built-in's source) and the draft, with the same
cache and lock as `serve`. A hub id that vLLM resolves itself is not the launcher's to fetch: it is said
so on stderr. Prints each source's local directory on stdout, one per line.
"""

from __future__ import annotations

import argparse
import os
import sys

from nim_specdec.cli import cmd_download
from nim_specdec.config.settings import Settings, parse_settings
from nim_specdec.config.sources import SourceRef
from nim_specdec.errors import ConfigError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "uris",
        nargs="*",
        metavar="URI",
        help="hf://, ngc://, s3://, gs:// URI or absolute directory; none: what NIM_* names",
    )


def configured_sources(settings: Settings) -> tuple[list[SourceRef], str | None]:
    """The sources serve would fetch for these settings, and the model vLLM resolves itself (or None)."""
    from nim_specdec.launch.resolve import resolve  # noqa: PLC0415 - only without URIs: +50 modules, ~70 ms

    plan = resolve(settings, [])
    refs = [ref for ref in (plan.target.ref, plan.draft.ref if plan.draft else None) if ref is not None]
    return refs, plan.target.source if plan.target.ref is None else None


def run(args: argparse.Namespace) -> int:
    if args.uris:
        return cmd_download.run(args)
    settings = parse_settings(os.environ)
    refs, by_vllm = configured_sources(settings)
    if by_vllm is not None:
        print(f"nim-specdec: {by_vllm} is a hub id vLLM downloads itself when it starts", file=sys.stderr)
    if not refs:
        raise ConfigError(
            "download-to-cache",
            "no URI was given and the NIM_* variables name nothing to download",
            "give URIs, or set NIM_MODEL_PATH (and NIM_DRAFT_MODEL_PATH) to the sources to fetch",
        )
    return cmd_download.download([ref.uri for ref in refs], settings)
