"""Strict JSON, the one parser for every value the launcher and the lab read: no NaN or Infinity,
bounded integers, nesting checked before parsing (the parser never recurses on hostile input), duplicate
keys refused, and errors that name where the JSON came from.

One relaxation, asked for by the caller: `python_floats=True` takes NaN, Infinity and -Infinity, the spelling
Python's json module writes for non-finite floats. A model's config.json is written that way by transformers
(Nemotron-H's `time_step_limit` defaults to (0.0, inf)) and read that way by transformers and vLLM, so refusing
it would refuse real checkpoints. Every other limit holds; a number too large for a float (1e999) is still
refused, since Python never writes one."""

from __future__ import annotations

import json
import math
from typing import Any

from nim_specdec.errors import ConfigError, LauncherError
from nim_specdec.text.redact import preview


def _preview(text: str, limit: int = 80) -> str:
    return preview(text, limit)  # masked before it is cut: a cut secret is no longer found by its value


# vLLM's numbers are 64-bit at most; a longer integer is a typo or an attack on int() (thousands of digits).
MAX_INT_DIGITS = 19
# Files from model stores get more room (some state "unlimited" lengths as 1e30 written out in digits).
FILE_INT_DIGITS = 64
# Deeper than any configuration needs, and far below the parser's recursion limit.
MAX_DEPTH = 64


def _hooks(
    where: str, error: type[LauncherError], max_digits: int, quote: bool = True, python_floats: bool = False
) -> dict[str, Any]:
    def shown(text: str, limit: int) -> str:
        return f" {_preview(text, limit)}" if quote else ""

    def constant(name: str) -> Any:
        if python_floats:  # the parser calls this for NaN, Infinity and -Infinity only
            return float(name)
        raise error(where, f"{name} is not a JSON number", "give a finite number")

    def integer(text: str) -> int:
        if len(text.lstrip("-")) > max_digits:
            raise error(where, f"integer{shown(text, 24)} is too large", f"use at most {max_digits} digits")
        return int(text)

    def real(text: str) -> float:
        value = float(text)
        if not math.isfinite(value):
            raise error(where, f"number{shown(text, 24)} is out of range", "give a finite number")
        return value

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        # json.loads keeps the last of two equal keys silently: the user meant one of them, not both.
        obj: dict[str, Any] = {}
        for key, value in pairs:
            if key in obj:
                named = f" {preview(key, 40)!r}" if quote else ""
                raise error(where, f"key{named} is given twice", "keep one of them")
            obj[key] = value
        return obj

    return {"parse_constant": constant, "parse_int": integer, "parse_float": real, "object_pairs_hook": unique}


def depth(text: str) -> int:
    """The deepest nesting of brackets outside strings: checked before parsing, so that the parser never
    recurses on hostile input."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def loads(
    text: str | bytes,
    where: str,
    error: type[LauncherError] = ConfigError,
    max_digits: int = MAX_INT_DIGITS,
    quote: bool = True,
    python_floats: bool = False,
) -> Any:
    """Strict JSON: no NaN or Infinity, integers of at most `max_digits` digits, nesting at most 64 deep.
    Errors are `error` (ConfigError for what the user wrote, MaterializeError for files from a store).
    `quote=False` for files: an error names the place and the problem, never the text (a file that is not
    what it should be may hold a secret). `python_floats=True` for files Python's json module writes (see
    the module's docstring): NaN, Infinity and -Infinity are read as Python reads them."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise error(where, "is not UTF-8 text", "check the file") from None
    if ("[" in text or "{" in text) and depth(text) > MAX_DEPTH:
        raise error(where, f"JSON nested more than {MAX_DEPTH} levels deep", "flatten the value")
    try:
        return json.loads(text, **_hooks(where, error, max_digits, quote, python_floats))
    except json.JSONDecodeError as err:
        raise error(
            where,
            f"invalid JSON at line {err.lineno} column {err.colno} ({err.msg})"
            + (f" in {_preview(text)!r}" if quote else ""),
            "check the quoting: inside a shell, wrap the whole JSON in single quotes" if quote else "check the file",
        ) from None
    except RecursionError:
        raise error(where, "JSON nested too deeply", "flatten the value") from None
