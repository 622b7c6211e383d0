"""`nim-specdec cache ls`: the entries of the download cache under NIM_CACHE_PATH.
`nim-specdec cache prune`: remove the compile caches of keys unused for a while, and the hf:// commits
their branch left as long ago."""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import asdict, replace
from pathlib import Path

from nim_specdec.config.settings import parse_settings
from nim_specdec.errors import ConfigError, printable
from nim_specdec.fetchers.hub.prune_commits import prune_commits
from nim_specdec.fetchers.transfer.progress import human_bytes
from nim_specdec.fetchers.volume.cache import CacheLayout, EntryInfo, list_entries
from nim_specdec.text.redact import redact_text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    ls = sub.add_parser("ls", help="list cached sources: URI, size, completed at")
    ls.add_argument("--json", action="store_true", help="one JSON object per entry")
    prune = sub.add_parser(
        "prune",
        help="remove compile caches (NIM_CACHE_PATH/compile/<key>) and hf:// commits "
        "their branch has left, unused for N days",
    )
    prune.add_argument(
        "--older-than",
        required=True,
        metavar="DAYS",
        help="remove keys whose last start, and commits whose branch moved on, at least this many days "
        "ago (0: every idle key and every superseded commit)",
    )
    prune.add_argument("--dry-run", action="store_true", help="say what would be removed, remove nothing")
    prune.add_argument("--json", action="store_true", help="one JSON object per key")


def format_table(entries: list[EntryInfo]) -> str:
    rows = [("URI", "SIZE", "FILES", "COMPLETED AT", "ENTRY")]
    for e in entries:
        if e.untrusted:
            rows.append((f"(not trusted, never served: {printable(e.untrusted)})", "-", "-", "-", printable(e.name)))
        elif e.completed_at:
            # An hf:// entry is a commit; the branch or tag it was fetched as says why it is there.
            uri = f"{e.uri} (as {e.requested})" if e.requested and e.requested != e.uri else e.uri
            rows.append(
                (printable(uri), human_bytes(e.size), str(e.files), printable(e.completed_at), printable(e.name))
            )
        else:
            rows.append(("(incomplete: unused, removed by the next download)", "-", "-", "-", printable(e.name)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1] for r in rows)


def _days(text: str) -> float:
    try:
        days = float(text)
    except ValueError:
        days = float("nan")
    if not (days >= 0 and days != float("inf")):
        raise ConfigError("--older-than", f"{text!r} is not a number of days >= 0", "e.g. --older-than 14")
    return days


def run_prune(args: argparse.Namespace) -> int:
    from nim_specdec.launch.compile_cache.prune import prune  # noqa: PLC0415 - +6 modules (~6 ms) on every parser build

    days = _days(args.older_than)
    root, now = Path(parse_settings(os.environ).locations.cache_path), time.time()
    base = root / "compile"
    states = [("compile", s) for s in prune(base, days * 86400.0, now, dry_run=args.dry_run)]
    # The same rule for the hf:// commits a branch has left: unused for that many days, they go.
    layout = CacheLayout.under(root)
    states += [("commit", s) for s in prune_commits(layout, days * 86400.0, now, dry_run=args.dry_run)]
    if args.json:
        for kind, state in states:
            print(json.dumps({"kind": kind, **asdict(state)}))
        return 0
    if not states:
        print(f"no compile caches or superseded hf:// commits under {printable(str(root))}")
        return 0
    for _, state in states:
        used = time.strftime("%Y-%m-%d %H:%M", time.gmtime(state.last_used)) if state.last_used else "-"
        print(f"{state.action:<22}  {human_bytes(state.size_bytes):>9}  last used {used} UTC  {printable(state.key)}")
    freed = sum(s.size_bytes for _, s in states if s.action in ("removed", "would remove"))
    print(f"{'would free' if args.dry_run else 'freed'} {human_bytes(freed)}")
    return 0


def run(args: argparse.Namespace) -> int:
    if args.action == "prune":
        return run_prune(args)
    settings = parse_settings(os.environ)
    root, secrets = Path(settings.locations.cache_path), list(settings.host.secrets)
    # A marker written by an older launcher could hold a URI with credentials: masked like every other output.
    entries = [
        replace(e, uri=redact_text(e.uri, secrets), requested=redact_text(e.requested, secrets))
        for e in list_entries(CacheLayout.under(root, settings.cache_trust_shared))
    ]
    if args.json:
        for e in entries:
            print(json.dumps(asdict(e)))
    elif not entries:
        print(f"no cached sources under {printable(str(root))}")
    else:
        print(format_table(entries))
    return 0
