"""The download section of the settings: one field per row of config.download_variables (docs/sources.md lists
them), each parsed by its row (config.table_reader); config.settings reads it with the rest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from nim_specdec.config import download_variables as dvar
from nim_specdec.config.table_reader import read_rows, section, table_fields

SECTION = "download"  # the rows whose field is "download.NAME"


@dataclass(frozen=True)
@table_fields(SECTION)
class DownloadSettings:
    # The rows' fields, typed here; each default is its row's (what an empty environment gives).
    timeout: float
    retries: int
    concurrency: int
    chunk_bytes: int  # NIM_DOWNLOAD_CHUNK_MB in bytes
    verify_checksums: bool  # NIM_DOWNLOAD_VERIFY=checksum
    lock_timeout: float
    progress_interval: float
    s3_anonymous: bool
    s5cmd: str  # "auto" | "on" | "off"
    deadline: float  # seconds for one source's download in all; 0: none
    min_rate: float  # bytes/s averaged over 4 x timeout; 0: none
    hf_resolve_timeout: float  # seconds to ask for a branch's commit, cache held
    hf_branch_follow: float  # seconds a branch's resolved commit is followed
    # NIM_DOWNLOAD_TIMEOUT was set: only then does it replace the timeout a client library reads itself.
    timeout_given: bool = False


def download_settings(env: Mapping[str, str], read: Mapping[str, Any] | None = None) -> DownloadSettings:
    """The section from `env`; `read`: the table's reading of it already made (config.settings reads every row
    once), else this section's rows are read here."""
    values = section(read_rows(env, within=SECTION) if read is None else read, SECTION)
    return DownloadSettings(**values, timeout_given=dvar.DOWNLOAD_TIMEOUT in env)
