"""Writing result files whole or not at all."""

from __future__ import annotations

import contextlib
import os

from nim_specdec.errors import ConfigError


def write_atomically(path: str, text: str, flag: str) -> None:
    """Write `text` to `path` through a temporary file, so a failure leaves no half file."""
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, path)
    except OSError as err:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise ConfigError(flag, f"cannot write {path} ({err.strerror})", "choose a writable path") from None
