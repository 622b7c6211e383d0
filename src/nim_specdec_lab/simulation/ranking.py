"""simulate's work: every model-free method's grid simulated exactly on the records, ranked, and recommended.

n-gram through the vectorized simulator of the model runner that will serve it (V1 drafts after the earliest
occurrence of the suffix, V2 after the rightmost one), suffix decoding through arctic-inference's own suffix trees
or, from vLLM 0.34 on a GPU, vLLM's native speculator. Takes a Simulation the command's edge parsed; prints the
tables and the recommendations, and writes them as JSON where asked.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from typing import Any, Mapping

from nim_specdec.files.output_files import write_atomically
from nim_specdec_lab.ngram import model_runner as mr
from nim_specdec_lab.ngram.corpus import build_corpus
from nim_specdec_lab.ngram.grid import Scored, predicted_speedup, rank
from nim_specdec_lab.ngram.simulator import NgramParams, requests_near_model_length, simulate
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
from nim_specdec_lab.simulation.inputs import RecordSource, current_setting, load_records
from nim_specdec_lab.suffix.simulator import simulate_suffix
from nim_specdec_lab.suffix.simulator_gpu import native_grid, simulate_suffix_gpu


@dataclass(frozen=True)
class Simulation:
    """One simulate (or tune-ngram) run, every value parsed and checked at the command's edge."""

    command: str  # the command's name, for its messages
    source: RecordSource
    verify_cost: float  # checked >= 0
    ngram: tuple[NgramParams, ...] | None = None  # None: n-gram not asked for
    suffix: tuple[Any, ...] | None = None  # None: suffix not asked for
    explicit: bool = True  # the methods were named (--method): a missing suffix package is an error, not a note
    model_runner: str = "auto"  # --model-runner
    platform: str | None = None  # None: the installed vLLM's
    serving_vllm_version: str | None = None  # None: the installed one
    current: str | None = None  # --current
    specdec_args: str | None = None  # NIM_SPECDEC_ARGS as the edge read it
    top: int | None = 15  # rows of each table; None: all
    json_out: str | None = None
    edge_flags: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # per method: key -> its flag


def suffix_available(explicit: bool, notes: list[str]) -> bool:
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


def simulate_methods(sim: Simulation) -> int:
    verify_cost = sim.verify_cost
    notes: list[str] = []
    installed, version = mr.installed_vllm()
    version = sim.serving_vllm_version or version
    platform = sim.platform or installed
    ngram_runner = mr.ngram_runner(sim.model_runner, platform, version)
    suffix_runner = mr.suffix_runner(platform, version)
    grids = {}
    if sim.ngram is not None:
        grids["ngram"] = list(sim.ngram)
    if sim.suffix is not None and (suffix_runner == "v2" or suffix_available(sim.explicit, notes)):
        grids["suffix"] = list(sim.suffix)
    current_params = current_setting(sim.current, sim.specdec_args, sim.source.url) if "ngram" in grids else None
    k_needed = max([p.k for g in grids.values() for p in g] + ([current_params.k] if current_params else []))
    records, max_model_len, record_notes = load_records(sim.source, k_needed, sim.command)
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
    for method, ranked in by_method.items():
        runner = mr.runner_of(method, ngram_runner, suffix_runner)
        print(f"\n{method} ({len(ranked)} settings, best first; {mr.LABELS[runner]})")
        print(table(ranked, sim.top, current if method == "ngram" else None))
    print()
    edges = [note for method, ranked in by_method.items() for note in edge_notes(method, ranked)]
    for method, ranked in by_method.items():
        print(recommendation_line(method, ranked[0]))
    for note in edges:
        print(f"note: {edge_line(note, sim.edge_flags.get(note['method'], {}))}")
    if len(by_method) > 1:
        best = overall(by_method)
        print(recommendation_line(f"overall ({speculative_config_method(best)})", best))
    if sim.json_out:
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
            sim.json_out,
            json.dumps(summary(by_method, meta, current, edges), indent=2, allow_nan=False) + "\n",
            "--json",
        )
    return 0


def speculative_config_method(scored) -> str:
    return speculative_config(scored.result.params)["method"]
