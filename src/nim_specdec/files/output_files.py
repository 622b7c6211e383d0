"""Writing result files whole or not at all."""

from __future__ import annotations

from pathlib import Path

from nim_specdec.errors import ConfigError
from nim_specdec.files.trust import write_replacing


def write_atomically(path: str, text: str, flag: str, mode: int = 0o644) -> None:
    """Write `text` to `path` through a fresh temporary file renamed over it, so a failure leaves no half
    file and a link planted at `path` is replaced, not followed. `mode` 0600 for users' data (token ids)."""
    try:
        write_replacing(Path(path), text.encode("utf-8"), mode=mode)
    except OSError as err:
        raise ConfigError(flag, f"cannot write {path} ({err.strerror or err})", "choose a writable path") from None
