"""What following a branch costs a start whose hf:// source is already cached, and what a start pays when
the Hub cannot answer.

    python bench/bench_hf_revision.py [--runs 30] [--server stub|olah] [--silent-runs 3]

The source is fetched once, then each run fetches it again from the warm cache, in this process, side by
side (alternating): named by its branch with downloads allowed (one metadata request to the server),
the same within NIM_HF_BRANCH_FOLLOW_S of that answer (followed: no request), named by its commit id (no
request), by its branch with downloads disabled (no request; the branch's record is read), and by its
branch with the Hub down (a closed port: refused at once, retried with backoff within
NIM_HF_RESOLVE_TIMEOUT_S, then the cached commit). Apart, --silent-runs starts against a Hub that accepts
the connection and never answers, with NIM_HF_RESOLVE_TIMEOUT_S=2: the time to the cached commit.
The server is the test suite's Hub stub, or olah (OLAH_BIN, or the checkout's .venv-olah, made when
missing). Prints the median, min and max per way, in milliseconds. The online ways also rewrite the
branch's or commit's small record files (written whole, fsync'd), which the others read.
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
    parser.add_argument("--silent-runs", type=int, default=3)
    args = parser.parse_args()

    from nim_specdec.config.sources import parse_source
    from nim_specdec.fetchers.download.base import FetchContext
    from nim_specdec.fetchers.hub.hf import HFFetcher
    from servers.fault_proxy import Fault, FaultProxy
    from servers.harness import model_files

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        endpoint, repo, stop = start_server(args.server, work, model_files(1 << 20))
        try:
            ctx = FetchContext(env={"HF_ENDPOINT": endpoint}, cache_dir=work / "cache")
            asking = dataclasses.replace(ctx, download=dataclasses.replace(ctx.download, hf_branch_follow=0.0))
            down = dataclasses.replace(asking, env={"HF_ENDPOINT": f"http://127.0.0.1:{closed_port()}"})
            branch = parse_source(f"hf://{repo}", "bench")
            path = HFFetcher().fetch(branch, asking)
            commit = json.loads((path.parent / "complete.json").read_text())["commit"]
            ways = {
                "branch, online (1 request)": (branch, asking),
                "branch, followed (no request)": (branch, ctx),
                "commit id (no request)": (parse_source(f"hf://{repo}@{commit}", "bench"), ctx),
                "branch, offline (no request)": (branch, dataclasses.replace(ctx, offline=True)),
                "branch, Hub down (refused)": (branch, down),
            }
            times: dict[str, list[float]] = {name: [] for name in ways}
            for _ in range(args.runs):
                for name, (ref, context) in ways.items():
                    started = time.perf_counter()
                    assert HFFetcher().fetch(ref, context) == path
                    times[name].append((time.perf_counter() - started) * 1000)
            proxy = FaultProxy(endpoint).start()
            try:
                proxy.inject(Fault("stall", "/api/models/", times=-1))
                silent_settings = dataclasses.replace(asking.download, hf_resolve_timeout=2.0)
                silent = dataclasses.replace(asking, env={"HF_ENDPOINT": proxy.url}, download=silent_settings)
                name = "branch, Hub silent (timeout 2 s)"
                times[name] = []
                for _ in range(args.silent_runs):
                    started = time.perf_counter()
                    assert HFFetcher().fetch(branch, silent) == path
                    times[name].append((time.perf_counter() - started) * 1000)
            finally:
                proxy.close()
        finally:
            stop()
    print(f"hf:// cache hit, {args.runs} runs each ({args.silent_runs} silent), server {args.server}, ms per fetch")
    for name, values in times.items():
        print(f"  {name:<34} median {statistics.median(values):8.2f}  min {min(values):8.2f}  max {max(values):8.2f}")
    return 0


def closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    sys.exit(main())
