"""Bytes a start fetches after a download was killed half-way, on the s3 and hf test servers.

    python bench/bench_resume.py [--runs 3] [--shards 40] [--shard-kib 64] [--rate-kib 128]

Each run publishes a sharded checkpoint in miniature (a config and SHARDS weight files of SHARD_KIB each),
starts `nim-specdec download` with the weights slowed to RATE_KIB a second per connection (two connections),
SIGKILLs it once half of the weights' bytes went out, and starts it again on the same cache with the store
well. The bytes are counted where they leave: by the fault proxy in front of the store (moto for s3://, with
s5cmd and with boto3; olah for hf://). Prints, per client, the first and second start's bytes and the second's
share of the weights (median and range over the runs), and the disk pre-flight's own cost (statvfs and the
decision, no network). A resumed download keeps whole verified files: what was in flight is fetched again.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src"), str(REPO / "tests")]


def s3_runs(args, work: Path) -> dict[str, list]:
    from servers.harness import cli_env
    from servers.interrupted import kill_at_half_then_resume, shard_files
    from servers.s3_store import S3Store

    store = S3Store().start()
    out: dict[str, list] = {"s3 s5cmd": [], "s3 boto3": []}
    try:
        for run in range(args.runs):
            for label, client in (("s3 s5cmd", "1"), ("s3 boto3", "0")):
                files = shard_files(args.shards, args.shard_kib * 1024)
                total = sum(len(v) for k, v in files.items() if k != "config.json")
                uri = store.publish(f"bench{uuid.uuid4().hex[:8]}", files)
                cache = work / f"{label.replace(' ', '-')}-{run}"
                env = cli_env(store, cache, NIM_S5CMD=client, NIM_DOWNLOAD_CONCURRENCY="2")
                figures, _ = kill_at_half_then_resume(store.proxy, env, uri, total, args.rate_kib * 1024)
                out[label].append(figures)
    finally:
        store.close()
    return out


def hf_runs(args, work: Path) -> dict[str, list]:
    from servers.fault_proxy import FaultProxy
    from servers.interrupted import kill_at_half_then_resume, shard_files
    from servers.olah_hub import OlahHub

    hub = OlahHub(work / "olah").start()
    proxy = FaultProxy(hub.url).start()
    out: dict[str, list] = {"hf olah": []}
    try:
        for run in range(args.runs):
            repo = hub.repo(f"org/bench{uuid.uuid4().hex[:8]}")
            files = shard_files(args.shards, args.shard_kib * 1024)
            repo.commit(files)
            total = sum(len(v) for k, v in files.items() if k != "config.json")
            env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "NIM_", "HUGGING", "AWS_"))}
            env.update(
                HF_ENDPOINT=proxy.url,
                NIM_CACHE_PATH=str(work / f"hf-{run}"),
                PYTHONPATH=str(REPO / "src"),
                NIM_DOWNLOAD_CONCURRENCY="2",
            )
            figures, _ = kill_at_half_then_resume(proxy, env, f"hf://{repo.name}", total, args.rate_kib * 1024)
            out["hf olah"].append(figures)
    finally:
        proxy.close()
        hub.stop()
    return out


def preflight_cost(folder: Path, repeats: int = 2000) -> list[float]:
    from nim_specdec.fetchers.volume.disk_space import refuse_if_short

    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        refuse_if_short("s3://b/m", 1024, folder)
        times.append((time.perf_counter() - started) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--shards", type=int, default=40)
    parser.add_argument("--shard-kib", type=int, default=64)
    parser.add_argument("--rate-kib", type=int, default=128)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-resume-") as tmp:
        work = Path(tmp)
        results = {**s3_runs(args, work), **hf_runs(args, work)}
        cost = preflight_cost(work)
    print(f"weights: {args.shards} files x {args.shard_kib} KiB, {args.rate_kib} KiB/s per connection, 2 connections")
    head = f"{'client':<10} {'total':>9} {'first (killed)':>15} {'second':>9} {'second/total':>13}"
    print(f"{head} {'range':>13} {'2nd s':>6}")
    for label, figures in results.items():
        ratios = [f.ratio for f in figures]
        print(
            f"{label:<10} {figures[0].total:>9} {int(statistics.median(f.first for f in figures)):>15}"
            f" {int(statistics.median(f.second for f in figures)):>9} {statistics.median(ratios):>13.3f}"
            f" {min(ratios):>6.3f}-{max(ratios):<6.3f} {statistics.median(f.second_s for f in figures):>6.2f}"
        )
    print(f"disk pre-flight (statvfs + decision): median {statistics.median(cost):.4f} ms, max {max(cost):.3f} ms")


if __name__ == "__main__":
    main()
