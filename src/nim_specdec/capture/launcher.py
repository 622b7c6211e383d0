"""Capture's launcher side: the vLLM arguments that install the middleware, and the start-up check of the
capture path, run before the launcher execs the vLLM server.

An unwritable capture path is not fatal: the launcher prints the warning returned here and serves
without capture (the middleware makes the same check when the server builds it, and stays out of
the way if the file cannot be opened).
"""

from __future__ import annotations

import os

from nim_specdec.capture.file import open_capture_file
from nim_specdec.config import variables as var
from nim_specdec.config.capture_config import CaptureConfig

# vLLM imports the middleware by this name inside its API server process.
MIDDLEWARE = "nim_specdec.capture.middleware.CaptureMiddleware"


def capture_middleware_args(cfg: CaptureConfig | None) -> list[str]:
    """The vLLM server arguments that install the capture middleware (none when capture is off)."""
    return ["--middleware", MIDDLEWARE] if cfg is not None else []


def check_writable(cfg: CaptureConfig | None) -> str | None:
    """None when capture is off or its file can be opened for appending, else a one-line warning.

    Creates the folder (0700) and the file (0600) when absent, as the server would; an empty
    capture file is the only thing it may leave behind.
    """
    if cfg is None:
        return None
    try:
        os.close(open_capture_file(cfg.path))
    except OSError as err:
        reason = err.strerror or type(err).__name__
        return (
            f"{var.CAPTURE_ARGS}.path: cannot write the capture file {cfg.path!r} ({reason}); "
            "payload capture stays off, serving goes on; mount a writable folder or set another path"
        )
    return None
