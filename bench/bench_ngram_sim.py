"""Throughput of the n-gram simulator: tokens per second per grid point.

Builds a synthetic trace that looks like chat traffic with prompt lookup potential (outputs
copy spans of their prompts between stretches of fresh tokens), then times the shared table
build and each grid point. Prints medians; "tokens" are prompt + output tokens of the trace.

    PYTHONPATH=src python bench/bench_ngram_sim.py [--requests 2000] [--prompt 1000] [--output 300]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from nim_specdec_lab.ngram.corpus import RecordedRequest, build_corpus
from nim_specdec_lab.ngram.grid import default_grid
from nim_specdec_lab.ngram.simulator import simulate


def synthetic_trace(requests: int, prompt_len: int, output_len: int, seed: int) -> list[RecordedRequest]:
    rng = np.random.default_rng(seed)
    trace = []
    for _ in range(requests):
        prompt = rng.integers(0, 32000, prompt_len)
        out: list[int] = []
        while len(out) < output_len + 8:
            if rng.random() < 0.5:
                at = int(rng.integers(0, prompt_len - 40))
                out.extend(prompt[at : at + int(rng.integers(4, 40))].tolist())
            else:
                out.extend(rng.integers(0, 32000, int(rng.integers(1, 20))).tolist())
        trace.append(RecordedRequest.of(prompt.tolist(), out[:output_len], out[output_len : output_len + 8]))
    return trace


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--prompt", type=int, default=1000)
    parser.add_argument("--output", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    trace = synthetic_trace(args.requests, args.prompt, args.output, seed=0)
    grid = default_grid()
    max_n = max(p.max_n for p in grid)
    total = args.requests * (args.prompt + args.output)
    outputs = args.requests * args.output

    builds, points = [], []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        corpus = build_corpus(trace, max_ngram=max_n)
        builds.append(time.perf_counter() - t0)
        for params in grid:
            t0 = time.perf_counter()
            simulate(corpus, params)
            points.append(time.perf_counter() - t0)
    build, point = statistics.median(builds), statistics.median(points)
    amortized = point + build / len(grid)
    print(
        f"trace: {args.requests} requests, {total:,} tokens ({outputs:,} output), grid of {len(grid)} points, max n {max_n}"  # noqa: E501
    )
    print(f"table build (once per trace): median {build * 1e3:.1f} ms")
    print(f"one grid point: median {point * 1e3:.1f} ms")
    print(f"tokens/s per grid point, build amortized over the grid: {total / amortized:,.0f}")
    print(f"tokens/s for a single point including the build: {total / (build + point):,.0f}")
    print(f"output tokens/s per grid point, build amortized: {outputs / amortized:,.0f}")


if __name__ == "__main__":
    main()
