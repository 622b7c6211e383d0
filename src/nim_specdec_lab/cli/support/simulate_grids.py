"""simulate's grids: the n-gram and suffix settings its flags name, each list checked (one line, exit 2)."""

from __future__ import annotations

import argparse

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


def suffix_grid(args: argparse.Namespace):
    specs = (
        ("--suffix-k", args.suffix_k, int, 1, None, "positive integers, e.g. 8,16"),
        ("--suffix-depth", args.suffix_depth, int, 1, None, "positive integers, e.g. 24,32"),
        ("--suffix-cached", args.suffix_cached, int, 0, None, "integers >= 0, e.g. 0,10000"),
        ("--suffix-factor", args.suffix_factor, float, 0, None, "numbers >= 0, e.g. 1.0,2.0"),
        ("--suffix-min-prob", args.suffix_min_prob, float, 0, 1, "numbers in [0, 1], e.g. 0.1"),
    )
    values = []
    for flag, text, kind, low, high, fix in specs:
        try:
            values.append(sg.parse_values(text, kind, low, high))
        except ValueError as err:
            raise ConfigError(flag, f"bad value list {text[:80]!r} ({err})", f"use {fix}") from None
    try:
        return sg.make_grid(*values)
    except ValueError as err:
        raise ConfigError("--suffix-*", str(err), "narrow the value lists") from None
