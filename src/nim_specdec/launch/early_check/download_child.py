"""The early check's download, in a process of its own (launch/early_check/while_downloading.py starts it).

`python -m nim_specdec.launch.early_check.download_child` reads the sources, the fetch context and log format made
from the parsed settings, and the descriptor of its report pipe from its stdin (pickled by the launcher that started
it: no second parse of the environment, no command line to go back through), downloads them into the cache,
and exits 0; a refusal is written on the report pipe as one JSON object (exit code and message) and the process
exits with that code. SIGTERM
unwinds through the download's cleanup: nothing reaches the cache, and the files verified so far stay in
the download's own folder for the next start to resume (fetchers/volume/resume.py).
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import sys
from dataclasses import replace
from typing import Sequence

from nim_specdec.config.settings import LogFormat
from nim_specdec.config.sources import SourceRef
from nim_specdec.errors import EXIT_INTERNAL, LauncherError
from nim_specdec.fetchers.context import stderr_loggers
from nim_specdec.fetchers.download.base import FetchContext
from nim_specdec.fetchers.registry import get_fetcher


def _stop(signum, _frame):
    raise SystemExit(128 + signum)


def download(refs: Sequence[SourceRef], ctx: FetchContext, log_format: LogFormat) -> None:
    info, warning = stderr_loggers(log_format)
    ctx = replace(ctx, log=info, warn=warning)
    for ref in refs:
        get_fetcher(ref.scheme).fetch(ref, ctx)


def _report(fd: int, code: int, error: str) -> int:
    os.write(fd, json.dumps({"code": code, "error": error[:4000]}).encode())
    return code


def main() -> int:
    signal.signal(signal.SIGTERM, _stop)
    refs, ctx, log_format, report = pickle.load(sys.stdin.buffer)  # from the launcher that started this process only
    try:
        download(refs, ctx, log_format)
    except LauncherError as err:
        return _report(report, err.exit_code, err.one_line())
    except Exception as err:  # noqa: BLE001 - the launcher reports it as one line, never a traceback
        return _report(report, EXIT_INTERNAL, f"internal error: {type(err).__name__}: {' '.join(str(err).split())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
