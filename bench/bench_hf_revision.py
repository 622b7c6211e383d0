"""What following a branch costs a start whose hf:// source is already cached.

    python bench/bench_hf_revision.py [--runs 30] [--server stub|olah]

The source is fetched once, then each run fetches it again from the warm cache, in this process, three
ways side by side (alternating): named by its branch with downloads allowed (one metadata request to the
server), named by its commit id (no request), and by its branch with downloads disabled (no request; the
branch's record is read). The server is the test suite's Hub stub, or olah (OLAH_BIN, or the checkout's
.venv-olah, made when missing). Prints the median, min and max per way, in milliseconds. Both online ways
also rewrite the branch's or commit's small record file (written whole, fsync'd), which the offline way reads.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src"), str(REPO / "tests")]


def start_server(kind: str, work: Path, files: dict[str, bytes]):
    """(HF_ENDPOINT, repo name, stop)"""
    if kind == "olah":
        from servers.olah_hub import OlahHub

        hub = OlahHub(work / "olah")
        hub.repo("bench-org/draft").commit(files)
        hub.start()
        return hub.url, "bench-org/draft", hub.stop
    from servers.hub_server import HubServer

    hub = HubServer().start()
    hub.repos.add("bench-org/draft", files)
    return hub.url, "bench-org/draft", hub.close


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--server", choices=("stub", "olah"), default="stub")
    args = parser.parse_args()

    from nim_specdec.config.sources import parse_source
    from nim_specdec.fetchers.base import FetchContext
    from nim_specdec.fetchers.hf import HFFetcher
    from servers.harness import model_files

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        endpoint, repo, stop = start_server(args.server, work, model_files(1 << 20))
        try:
            ctx = FetchContext(env={"HF_ENDPOINT": endpoint}, cache_dir=work / "cache")
            branch = parse_source(f"hf://{repo}", "bench")
            path = HFFetcher().fetch(branch, ctx)
            commit = json.loads((path.parent / "complete.json").read_text())["commit"]
            ways = {
                "branch, online (1 request)": (branch, ctx),
                "commit id (no request)": (parse_source(f"hf://{repo}@{commit}", "bench"), ctx),
                "branch, offline (no request)": (branch, dataclasses.replace(ctx, offline=True)),
            }
            times: dict[str, list[float]] = {name: [] for name in ways}
            for _ in range(args.runs):
                for name, (ref, context) in ways.items():
                    started = time.perf_counter()
                    assert HFFetcher().fetch(ref, context) == path
                    times[name].append((time.perf_counter() - started) * 1000)
        finally:
            stop()
    print(f"hf:// cache hit, {args.runs} runs each, server {args.server}, milliseconds per fetch")
    for name, values in times.items():
        print(f"  {name:<30} median {statistics.median(values):7.2f}  min {min(values):7.2f}  max {max(values):7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
