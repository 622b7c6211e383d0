"""`nim-specdec download URI...`: pre-fetch sources into the cache (init containers, air-gapped preparation).

Prints each source's local directory on stdout, one per line, in the order given.
"""

from __future__ import annotations

import argparse
import os
import signal

from nim_specdec.config.settings import Settings, parse_settings
from nim_specdec.config.sources import parse_source
from nim_specdec.fetchers.context import shared_trust_warning, stderr_loggers
from nim_specdec.fetchers.registry import get_fetcher
from nim_specdec.launch.stage_inputs import fetch_context, log_format


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("uris", nargs="+", metavar="URI", help="hf://, ngc://, s3://, gs:// URI or absolute directory")


def _stop(signum, _frame):
    # Unwinds through the download's cleanup: its staging directory is removed, nothing half-written stays.
    raise SystemExit(128 + signum)


def run(args: argparse.Namespace) -> int:
    return download(args.uris, parse_settings(os.environ))


def download(uris: list[str], settings: Settings) -> int:
    signal.signal(signal.SIGTERM, _stop)
    ctx = fetch_context(settings, *stderr_loggers(log_format(settings)))
    warning = shared_trust_warning(ctx)
    if warning:
        ctx.warn(warning)
    refs = [parse_source(uri, "download") for uri in uris]  # all checked before any download starts
    for ref in refs:
        print(get_fetcher(ref.scheme).fetch(ref, ctx), flush=True)
    return 0
