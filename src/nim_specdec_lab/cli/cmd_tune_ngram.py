"""tune-ngram: `simulate --method ngram`, under its earlier name and flags (--k, --min, --max).

Replays a mooncake_payload capture greedily against a server running WITHOUT speculation (or
reads saved records), simulates vLLM's n-gram proposer for a grid of (num_speculative_tokens,
prompt_lookup_min, prompt_lookup_max) and recommends a setting; see `nim-specdec simulate`.
"""

from __future__ import annotations

import argparse

from nim_specdec_lab.cli.cmd_simulate import add_output_arguments, add_source_arguments, simulate_methods


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_source_arguments(parser)
    grid = parser.add_argument_group("grid")
    grid.add_argument("--k", dest="ngram_k", default="1-6,8", help="num_speculative_tokens values (default 1-6,8)")
    grid.add_argument("--min", dest="ngram_min", default="1-4", help="prompt_lookup_min values (default 1-4)")
    grid.add_argument("--max", dest="ngram_max", default="1-5", help="prompt_lookup_max values (default 1-5)")
    add_output_arguments(parser)
    parser.set_defaults(_flags={"ngram_k": "--k", "ngram_min": "--min", "ngram_max": "--max"})


def run(args: argparse.Namespace) -> int:
    return simulate_methods(args, ("ngram",), "tune-ngram")
