"""`docker run --env-file` files, read strictly, and the environments bench --serve starts its servers with.

The format is Docker's: one `NAME=VALUE` a line, the value taken literally to the end of the line (quotes
are part of it), `#` at the start of a line for a comment, blank lines ignored, and a bare `NAME` taking
that variable from the current environment (left out when it is not set there). Anything else is an
error naming the file and the line, so that a typo never silently measures the wrong configuration.
"""

from __future__ import annotations

import os
import re
from typing import Iterable, Mapping

from nim_specdec.config import variables as var
from nim_specdec.errors import ConfigError

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
FIX = "write one NAME=VALUE a line (docker run --env-file format)"
# Taken from a side's file only, never from the current environment: the speculative-decoding variables'
# common prefix (NIM_SPECDEC_), so that a misspelt one in the environment is left out too.
SIDE_OWN = os.path.commonprefix([var.SPECDEC_ENABLE, var.SPECDEC_ARGS, var.SPECDEC_PREFLIGHT])


def parse_env_file(lines: Iterable[str], option: str, path: str, environ: Mapping[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip("\r\n")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, sep, value = line.partition("=")
        name = name.lstrip()  # Docker trims whitespace before the name
        if not _NAME.fullmatch(name):
            # Only the part before '=' is shown: a line may hold a secret, and the value is never printed.
            what = f"{name[:40]!r}= is not a variable name" if sep else "has no '=' and is not a variable name"
            raise ConfigError(option, f"{path} line {number}: {what}", FIX)
        if not sep:
            if name in environ:
                out[name] = environ[name]
            continue
        out[name] = value
    return out


def side_env(environ: Mapping[str, str], overrides: Mapping[str, str] | None, speculation_off: bool) -> dict[str, str]:
    """A side's environment. With a file: the current environment is the base (the model, caches, keys: what
    both sides share, as `NIM_MODEL_PATH=... nim-specdec bench --serve --candidate ngram.env` means it),
    without its NIM_SPECDEC_* variables (speculation is the side's own, so a side says it in its file or runs
    without it), and the file's variables over it. Without a file: the current environment, with
    NIM_SPECDEC_ENABLE=0 for the default baseline."""
    if overrides is None:
        env = dict(environ)
        if speculation_off:
            env[var.SPECDEC_ENABLE] = "0"
        return env
    return {**{k: v for k, v in environ.items() if not k.startswith(SIDE_OWN)}, **overrides}
