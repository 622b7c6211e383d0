"""What checking while downloading saves: `prepare` of a remote target (S3 on loopback, weights throttled
to a known rate) against the same work done one after the other (`download`, then `prepare` on the warm
cache, which runs the vLLM check at once), alternated in one run, fresh cache each time; and how soon a
configuration vLLM refuses stops the download.

    python bench/bench_early_check.py [--runs 3] [--mib 4] [--kib-per-s 400]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the loopback store the tests use

from servers.fault_proxy import Fault  # noqa: E402
from servers.harness import TINY_LLAMA_CONFIG as CONFIG  # noqa: E402
from servers.harness import WEIGHTS, cli_env, model_files  # noqa: E402
from servers.s3_store import S3Store  # noqa: E402


def _timed(args: list[str], env: dict, ok: int = 0) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "nim_specdec", *args], env=env, capture_output=True, text=True, timeout=900
    )
    if done.returncode != ok:
        sys.exit(f"{args[0]} exited {done.returncode}: {done.stderr[-2000:]}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--mib", type=float, default=4.0)
    parser.add_argument("--kib-per-s", type=int, default=400)
    args = parser.parse_args()
    store = S3Store().start()
    overlapped, serial, refused = [], [], []
    try:
        files = {**model_files(int(args.mib * 2**20)), "config.json": json.dumps(CONFIG).encode()}
        target = store.publish(f"t{uuid.uuid4().hex[:8]}", files)
        for _ in range(args.runs):
            for kind in ("overlapped", "serial", "refused"):
                store.proxy.reset()
                store.proxy.inject(Fault("slow", WEIGHTS, times=-1, bytes_per_second=args.kib_per_s * 1024))
                with tempfile.TemporaryDirectory() as tmp:
                    env = cli_env(
                        store,
                        Path(tmp) / "cache",
                        NIM_MODEL_PATH=target,
                        NIM_SPECDEC_ENABLE="0",
                        NIM_SPECDEC_PREFLIGHT="off",
                    )
                    if kind == "overlapped":
                        overlapped.append(_timed(["prepare"], env))
                    elif kind == "serial":
                        serial.append(_timed(["download", target], env) + _timed(["prepare"], env))
                    else:
                        refused.append(_timed(["prepare", "--max-model-len", "100000"], env, ok=2))
    finally:
        store.close()
    download_s = args.mib * 1024 / args.kib_per_s
    med = statistics.median
    print(
        f"remote target, {args.mib:g} MiB of weights at {args.kib_per_s} KiB/s (about {download_s:.1f} s), {args.runs} runs, medians:"  # noqa: E501
    )
    print(f"  prepare, check while downloading:        {med(overlapped):6.2f} s")
    print(f"  download, then prepare on the warm cache: {med(serial):6.2f} s  ({med(serial) / med(overlapped):.2f}x)")
    print(f"  prepare of a configuration vLLM refuses: {med(refused):6.2f} s to exit 2, download stopped")


if __name__ == "__main__":
    main()
