"""gs:// and hf:// downloads on loopback against the fastest clients their libraries offer.

    python bench/bench_gs_hf_download.py [--runs 3] [--big-mib 256] [--small-mib 64] [--schemes gs,hf]

The stores are the test suite's own loopback servers (tests/servers): gcp-storage-emulator for gs://,
the Hub-protocol server for hf://, reached directly (no fault proxy). The same draft (one big file,
three smaller ones) is downloaded side by side, alternating, with:
  gs://  our fetcher with NIM_DOWNLOAD_VERIFY=checksum (default) and =size (fresh cache, verify and
         atomic rename included); google-cloud-storage's transfer manager, download_many on threads,
         with its in-flight MD5 check and without; the library's sliced download of each file
         (download_chunks_concurrently, threads), the fastest transfer it has for big objects;
  hf://  our fetcher with checksum and with size; huggingface_hub's snapshot_download with 8 workers
         (its fastest transfer for files the Hub does not serve through Xet; hf_transfer is no longer
         used by huggingface_hub 1.0 and later), which checks no digest.
Also the floor a verified download pays: the digest (CRC32C, which our gs:// check uses, and MD5,
which it used before; the LFS SHA-256 for hf://) of the same files on disk, two threads, no download.
Prints medians and ratios to the fastest client.
Both servers are written in Python: they bound the speed here, so the ratios say what each client
adds on top of the same server, not what a real store would deliver.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src"), str(REPO / "tests")]

WORKERS = 8


def payload(big_mib: int, small_mib: int) -> dict[str, bytes]:
    def blob(mib: int, seed: int) -> bytes:
        block = os.urandom(1024 * 1024)
        return b"".join(block[(i + seed) % 251 :] + block[: (i + seed) % 251] for i in range(mib))

    return {"model.safetensors": blob(big_mib, 0), **{f"part-{i}.bin": blob(small_mib, i + 1) for i in range(3)}}


def timed(run) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def ours(scheme_uri: str, env: dict[str, str], work: Path, verify: str):
    from nim_specdec.config.download_settings import download_settings
    from nim_specdec.config.sources import parse_source
    from nim_specdec.fetchers.download.base import FetchContext
    from nim_specdec.fetchers.registry import get_fetcher

    def run() -> None:
        cache = work / "cache-ours"
        full = {
            **os.environ,
            **env,
            "NIM_CACHE_PATH": str(cache),
            "NIM_DOWNLOAD_VERIFY": verify,
            "NIM_PROGRESS_INTERVAL": "3600",
        }
        ref = parse_source(scheme_uri, "bench")
        get_fetcher(ref.scheme).fetch(ref, FetchContext(env=full, cache_dir=cache, download=download_settings(full)))
        shutil.rmtree(cache)

    return run


def digest_floor(files: dict[str, bytes], work: Path, algorithm: str):
    from nim_specdec.fetchers.integrity.digests import file_digest  # the fetcher's own hashing

    folder = work / "floor"
    folder.mkdir(exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)

    def run() -> None:
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda path: file_digest(path, algorithm), sorted(folder.iterdir())))

    return run


def gs_contenders(files: dict[str, bytes], work: Path) -> dict[str, object]:
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage
    from google.cloud.storage import transfer_manager

    from servers.gcs_store import BUCKET, GCSStore

    store = GCSStore().start()
    uri = store.publish("draft", files)

    def client():
        return storage.Client(
            project="bench", credentials=AnonymousCredentials(), client_options={"api_endpoint": store.direct_url}
        )

    def many(checksum: str | None):
        def run() -> None:
            out = work / "out-gcs"
            out.mkdir()
            c = client()
            blobs = list(c.list_blobs(BUCKET, prefix="draft/"))
            pairs = [(b, str(out / Path(b.name).name)) for b in blobs]
            for result in transfer_manager.download_many(
                pairs,
                download_kwargs={"checksum": checksum},
                worker_type=transfer_manager.THREAD,
                max_workers=WORKERS,
                raise_exception=True,
            ):
                if isinstance(result, BaseException):
                    raise result
            shutil.rmtree(out)

        return run

    def sliced() -> None:
        out = work / "out-gcs-sliced"
        out.mkdir()
        c = client()
        for b in c.list_blobs(BUCKET, prefix="draft/"):
            transfer_manager.download_chunks_concurrently(
                b,
                str(out / Path(b.name).name),
                chunk_size=32 * 1024 * 1024,
                worker_type=transfer_manager.THREAD,
                max_workers=WORKERS,
            )
        shutil.rmtree(out)

    env = {"STORAGE_EMULATOR_HOST": store.direct_url}
    return {
        "_close": store.close,
        "ours, checksum (default)": ours(uri, env, work, "checksum"),
        "ours, size only": ours(uri, env, work, "size"),
        "download_many, MD5 in flight": many("md5"),
        "download_many, no checksum": many(None),
        "sliced, no checksum": sliced,
        "MD5 of the files, no download": digest_floor(files, work, "md5"),
        "CRC32C of the files, no download": digest_floor(files, work, "crc32c"),
    }


def hf_contenders(files: dict[str, bytes], work: Path) -> dict[str, object]:
    from huggingface_hub import snapshot_download

    from servers.hub_server import HubServer

    hub = HubServer().start()
    hub.repos.add("bench-org/draft", files)

    def library() -> None:
        out = work / "out-hf"
        snapshot_download("bench-org/draft", local_dir=str(out), endpoint=hub.url, max_workers=WORKERS, token=False)
        shutil.rmtree(out)

    env = {"HF_ENDPOINT": hub.url, "HF_HUB_DISABLE_TELEMETRY": "1"}
    return {
        "_close": hub.close,
        "ours, checksum (default)": ours("hf://bench-org/draft", env, work, "checksum"),
        "ours, size only": ours("hf://bench-org/draft", env, work, "size"),
        "snapshot_download, 8 workers": library,
        "SHA-256 of the files, no download": digest_floor(files, work, "sha256"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--big-mib", type=int, default=256)
    parser.add_argument("--small-mib", type=int, default=64)
    parser.add_argument("--schemes", default="gs,hf")
    args = parser.parse_args()
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"  # read by huggingface_hub at import, which comes later
    files = payload(args.big_mib, args.small_mib)
    total_mib = sum(len(v) for v in files.values()) / 2**20
    makers = {"gs": gs_contenders, "hf": hf_contenders}
    for scheme in args.schemes.split(","):
        with tempfile.TemporaryDirectory(prefix="nim-specdec-bench-") as tmp:
            contenders = makers[scheme](files, Path(tmp))
            close = contenders.pop("_close")
            try:
                times: dict[str, list[float]] = {name: [] for name in contenders}
                for _ in range(args.runs):
                    for name, run in contenders.items():
                        times[name].append(timed(run))
            finally:
                close()
        medians = {name: statistics.median(v) for name, v in times.items()}
        clients = {n: t for n, t in medians.items() if not n.startswith("ours") and "no download" not in n}
        fastest_name = min(clients, key=clients.get)
        print(
            f"\n{scheme}:// {total_mib:.0f} MiB in {len(files)} files, {args.runs} runs, medians "
            f"(ratio to the fastest client, {fastest_name})"
        )
        for name, seconds in medians.items():
            print(
                f"  {name:<34} {seconds:7.2f} s  {seconds / clients[fastest_name]:5.2f}x  "
                f"{total_mib / seconds:7.1f} MiB/s"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
