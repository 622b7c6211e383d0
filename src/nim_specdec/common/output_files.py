"""Writing result files whole or not at all."""

from __future__ import annotations

from pathlib import Path

from nim_specdec.errors import ConfigError
from nim_specdec.common.trust import write_replacing


def write_atomically(path: str, text: str, flag: str) -> None:
    """Write `text` to `path` through a fresh temporary file renamed over it, so a failure leaves no half
    file and a link planted at `path` is replaced, not followed."""
    try:
        write_replacing(Path(path), text.encode("utf-8"), mode=0o644)
    except OSError as err:
        raise ConfigError(flag, f"cannot write {path} ({err.strerror or err})", "choose a writable path") from None
