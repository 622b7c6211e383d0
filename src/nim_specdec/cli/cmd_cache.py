"""`nim-specdec cache ls`: the entries of the download cache under NIM_CACHE_PATH."""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import asdict, replace

from nim_specdec.errors import printable
from nim_specdec.fetchers.cache import CacheLayout, EntryInfo, list_entries
from nim_specdec.fetchers.context import cache_dir
from nim_specdec.fetchers.progress import human_bytes
from nim_specdec.launch.redact import redact_text, secret_values


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    ls = sub.add_parser("ls", help="list cached sources: URI, size, completed at")
    ls.add_argument("--json", action="store_true", help="one JSON object per entry")


def format_table(entries: list[EntryInfo]) -> str:
    rows = [("URI", "SIZE", "FILES", "COMPLETED AT", "ENTRY")]
    for e in entries:
        if e.untrusted:
            rows.append((f"(not trusted, never served: {printable(e.untrusted)})", "-", "-", "-", printable(e.name)))
        elif e.completed_at:
            rows.append((printable(e.uri), human_bytes(e.size), str(e.files), printable(e.completed_at), printable(e.name)))
        else:
            rows.append(("(incomplete: unused, removed by the next download)", "-", "-", "-", printable(e.name)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1] for r in rows)


def run(args: argparse.Namespace) -> int:
    root = cache_dir(os.environ)
    secrets = secret_values(os.environ)
    # A marker written by an older launcher could hold a URI with credentials: masked like every other output.
    entries = [replace(e, uri=redact_text(e.uri, secrets)) for e in list_entries(CacheLayout.under(root))]
    if args.json:
        for e in entries:
            print(json.dumps(asdict(e)))
    elif not entries:
        print(f"no cached sources under {printable(str(root))}")
    else:
        print(format_table(entries))
    return 0
