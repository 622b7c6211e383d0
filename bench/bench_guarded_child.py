"""What the guarded transfer's child costs per transfer: a fresh interpreter (now) against a fork of the launcher
(before), for hf://, gs:// and ngc:// downloads of a small draft from the test suite's loopback stores.

    python bench/bench_guarded_child.py [--runs 7] [--before SRC]

`--before SRC`: the src folder of a checkout whose transfer child was a fork (e.g. `git archive 11ad62a src | tar
-x -C /tmp/before`, then --before /tmp/before/src). Each run is one `fetch()` of a 64 KiB draft into a fresh cache,
timed inside a new process (the launcher's own start-up is not counted; the library is imported by the listing,
as in a launcher, before the transfer starts); now and before alternate. Prints medians, spread and the difference,
which is the child's cost.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests")]

_RUN = """
import json, sys, time
sys.path[:0] = [sys.argv[1], sys.argv[2]]
from servers.harness import context_for
from nim_specdec.config.sources import parse_source
from nim_specdec.fetchers.registry import get_fetcher
from pathlib import Path
env, uri = json.loads(sys.argv[3]), sys.argv[4]
ref = parse_source(uri, "NIM_DRAFT_MODEL_PATH")
started = time.perf_counter()
get_fetcher(ref.scheme).fetch(ref, context_for(env, Path(sys.argv[5]), log=lambda _m: None))
print(time.perf_counter() - started)
"""


def timed_fetch(src: str, env: dict[str, str], uri: str, work: Path) -> float:
    cache = work / f"cache-{uuid.uuid4().hex[:8]}"
    try:
        out = subprocess.run(
            [sys.executable, "-c", _RUN, src, str(REPO / "tests"), json.dumps(env), uri, str(cache)],
            capture_output=True,
            text=True,
            check=True,
        )
        return float(out.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def spread(values: list[float]) -> str:
    return f"{min(values):.3f}-{max(values):.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--before", help="the src folder of a checkout whose transfer child was a fork")
    parser.add_argument("--schemes", default="hf,gs,ngc")
    args = parser.parse_args()
    from servers.gcs_store import GCSStore
    from servers.hf_store import HFStore
    from servers.ngc_store import NGCStore

    variants = {"now (fresh interpreter)": str(REPO / "src")}
    if args.before:
        variants["before (fork)"] = str(Path(args.before).resolve())
    stores = {"hf": HFStore, "gs": GCSStore, "ngc": NGCStore}
    print(f"guarded transfer child, {args.runs} runs each, alternated; seconds of one fetch() of a 64 KiB draft")
    with tempfile.TemporaryDirectory(prefix="nim-specdec-bench-") as tmp:
        for scheme in args.schemes.split(","):
            store = stores[scheme]().start()
            try:
                uri = store.publish(f"child{uuid.uuid4().hex[:8]}", {"config.json": b"{}", "w.bin": os.urandom(65536)})
                env = {**os.environ, **store.env()}
                times: dict[str, list[float]] = {name: [] for name in variants}
                for name, src in variants.items():
                    timed_fetch(src, env, uri, Path(tmp))  # warm-up: the page cache holds the libraries
                for _ in range(args.runs):
                    for name, src in variants.items():
                        times[name].append(timed_fetch(src, env, uri, Path(tmp)))
                now = statistics.median(times["now (fresh interpreter)"])
                for name, values in times.items():
                    med = statistics.median(values)
                    print(
                        f"  {scheme:3s} {name:24s} median {med:6.3f} s  spread {spread(values)}  "
                        f"now - this: {now - med:+.3f} s"
                    )
            finally:
                store.close()


if __name__ == "__main__":
    main()
