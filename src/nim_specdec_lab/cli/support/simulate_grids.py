"""simulate's grids: the n-gram and suffix settings its flags name, each list checked (one line, exit 2)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from nim_specdec.errors import ConfigError
from nim_specdec_lab.ngram.grid import make_grid, parse_int_set
from nim_specdec_lab.suffix import grid as sg


def ngram_grid(args: argparse.Namespace):
    flags = args._flags
    sets = {}
    for dest in ("ngram_k", "ngram_min", "ngram_max"):
        try:
            sets[dest] = parse_int_set(getattr(args, dest))
        except ValueError as err:
            raise ConfigError(
                flags[dest], str(err), "use comma-separated positive integers or ranges, e.g. 1-4,6"
            ) from None
    try:
        grid = make_grid(sets["ngram_k"], sets["ngram_min"], sets["ngram_max"])
    except ValueError as err:
        raise ConfigError(
            "/".join(flags[d] for d in ("ngram_k", "ngram_min", "ngram_max")), str(err), "narrow the ranges"
        ) from None
    if not grid:
        raise ConfigError(
            f"{flags['ngram_min']}/{flags['ngram_max']}",
            "no pair with min <= max",
            "widen the max values or lower the min values",
        )
    return grid


@dataclass(frozen=True)
class SuffixFlag:
    """One flag of the suffix grid: the speculative_config key its values set, their default, kind and bounds,
    and the fix a bad list is answered with."""

    flag: str
    key: str
    default: str
    kind: type
    low: float
    high: float | None
    fix: str
    note: str = ""  # said after "values" in the flag's help

    @property
    def dest(self) -> str:
        return self.flag.removeprefix("--").replace("-", "_")

    @property
    def help(self) -> str:
        return f"{self.key} values{self.note} (default {self.default})"


# In the order of the grid's points (suffix.grid.make_grid).
SUFFIX_FLAGS = (
    SuffixFlag("--suffix-k", "num_speculative_tokens", sg.DEFAULT_K, int, 1, None, "positive integers, e.g. 8,16"),
    SuffixFlag(
        "--suffix-depth",
        "suffix_decoding_max_tree_depth",
        sg.DEFAULT_DEPTH,
        int,
        1,
        None,
        "positive integers, e.g. 24,32",
    ),
    SuffixFlag(
        "--suffix-cached",
        "suffix_decoding_max_cached_requests",
        sg.DEFAULT_CACHED,
        int,
        0,
        None,
        "integers >= 0, e.g. 0,10000",
        ", 0 = no global tree",
    ),
    SuffixFlag(
        "--suffix-factor",
        "suffix_decoding_max_spec_factor",
        sg.DEFAULT_FACTOR,
        float,
        0,
        None,
        "numbers >= 0, e.g. 1.0,2.0",
    ),
    SuffixFlag(
        "--suffix-min-prob",
        "suffix_decoding_min_token_prob",
        sg.DEFAULT_MIN_PROB,
        float,
        0,
        1,
        "numbers in [0, 1], e.g. 0.1",
    ),
)


def suffix_grid(args: argparse.Namespace):
    values = []
    for f in SUFFIX_FLAGS:
        text = getattr(args, f.dest)
        try:
            values.append(sg.parse_values(text, f.kind, f.low, f.high))
        except ValueError as err:
            raise ConfigError(f.flag, f"bad value list {text[:80]!r} ({err})", f"use {f.fix}") from None
    try:
        return sg.make_grid(*values)
    except ValueError as err:
        raise ConfigError("--suffix-*", str(err), "narrow the value lists") from None
