"""What bench's two flows read and write: the workloads (--trace, --speed-bench), the --concurrency values, and
report.json, report.md and the plots under --out."""

from __future__ import annotations

import argparse
from pathlib import Path

from nim_specdec.errors import ConfigError
from nim_specdec.files.regular_file import read_regular
from nim_specdec_lab.bench.inputs import SPEED_BENCH_CATEGORIES, from_capture, speed_bench_mix
from nim_specdec_lab.cli.cmd_tune import parse_concurrencies

# A trace or SPEED-Bench's prepared file.
MAX_PROMPTS_BYTES = 256 * 1024 * 1024


def _read_lines(path: Path, option: str, fix: str) -> list[str]:
    try:
        return read_regular(path, MAX_PROMPTS_BYTES).decode("utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(option, f"cannot read {path} ({getattr(err, 'strerror', None) or err})", fix) from None


def workloads(args: argparse.Namespace) -> list:
    """What --trace or --speed-bench names, read and checked: one workload per run."""
    if args.trace:
        path = Path(args.trace)
        return [from_capture(path.stem, _read_lines(path, "--trace", "check the path"))]
    if args.speed_bench:
        source = Path(args.speed_bench) / "qualitative.jsonl"
        if not source.is_file():
            raise ConfigError(
                "--speed-bench", f"{source} does not exist", "run SPEED-Bench's prepare.py --output_dir DIR first"
            )
        categories = list(dict.fromkeys(c.strip() for c in args.categories.split(",") if c.strip()))
        unknown = sorted(set(categories) - set(SPEED_BENCH_CATEGORIES))
        if unknown or not categories:
            raise ConfigError(
                "--categories", f"unknown categories {unknown}", f"choose from {', '.join(SPEED_BENCH_CATEGORIES)}"
            )
        lines = _read_lines(source, "--speed-bench", "run SPEED-Bench's prepare.py again")
        return [speed_bench_mix(categories, lines)]
    raise ConfigError("bench", "needs --trace or --speed-bench", "see nim-specdec bench --help")


def concurrencies(text: str, several: bool) -> tuple[int, ...]:
    values = parse_concurrencies(str(text))
    if len(values) > 1 and not several:
        raise ConfigError("--concurrency", f"{text!r} names several concurrencies", "give one, or use --serve")
    return values
