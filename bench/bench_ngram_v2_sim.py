"""Throughput of the V2 n-gram simulation (vLLM's V2 model runner): tokens per second per setting.

Same synthetic chat-like trace as bench_ngram_sim.py (outputs copy spans of their prompts between
fresh tokens). Times the shared table build (rightmost occurrences) and each setting of the default
grid, several rounds; prints the median and the spread (min-max over rounds) of each figure.
"tokens" are the prompt + output tokens of the trace.

    PYTHONPATH=src python bench/bench_ngram_v2_sim.py [--requests 2000] [--prompt 1000] [--output 300] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

from bench_ngram_sim import synthetic_trace
from nim_specdec_lab.ngram.corpus import build_corpus
from nim_specdec_lab.ngram.grid import default_grid
from nim_specdec_lab.ngram.simulator_v2 import simulate_v2


def _spread(values: list[float]) -> str:
    return f"median {statistics.median(values):,.0f} (min {min(values):,.0f}, max {max(values):,.0f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--prompt", type=int, default=1000)
    parser.add_argument("--output", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    trace = synthetic_trace(args.requests, args.prompt, args.output, seed=0)
    grid = default_grid()
    max_n = max(p.max_n for p in grid)
    total = args.requests * (args.prompt + args.output)

    builds, per_point, alone, amortized, single = [], [], [], [], []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        corpus = build_corpus(trace, max_ngram=max_n, pad=max(p.k for p in grid) + 1, occurrence="last")
        build = time.perf_counter() - t0
        points = []
        for params in grid:
            t0 = time.perf_counter()
            simulate_v2(corpus, params)
            points.append(time.perf_counter() - t0)
        point = statistics.median(points)
        builds.append(build * 1e3)
        per_point.append(point * 1e3)
        alone.append(total / point)
        amortized.append(total / (point + build / len(grid)))
        single.append(total / (build + point))
    print(
        f"trace: {args.requests} requests, {total:,} tokens, grid of {len(grid)} settings, max n {max_n}, "
        f"{args.repeats} rounds"
    )
    print(f"table build (once per trace), ms: {_spread(builds)}")
    print(f"one setting, ms: {_spread(per_point)}")
    print(f"tokens/s per setting, the shared table build left out: {_spread(alone)}")
    print(f"tokens/s per setting, build amortized over the grid: {_spread(amortized)}")
    print(f"tokens/s for a single setting including the build: {_spread(single)}")


if __name__ == "__main__":
    main()
