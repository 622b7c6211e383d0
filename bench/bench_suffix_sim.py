"""Throughput of the suffix and n-gram simulators, side by side on one synthetic trace.

The trace is bench_ngram_sim's (chat-like traffic whose outputs copy spans of their prompts). For
each suffix setting the whole trace runs through arctic-inference's suffix trees, as vLLM's
proposer drives them; n-gram runs its default grid on the same trace. "tokens" are prompt +
output tokens; figures are medians over the repeats. Each figure is given per second of wall-clock
time and per second of this process's CPU time: on a shared machine the two differ by the time the
process waited for a core.

    PYTHONPATH=src python bench/bench_suffix_sim.py [--requests 200] [--prompt 1000] [--output 300]
"""

from __future__ import annotations

import argparse
import statistics
import time

from bench_ngram_sim import synthetic_trace
from nim_specdec_lab.ngram.corpus import build_corpus
from nim_specdec_lab.ngram.grid import default_grid
from nim_specdec_lab.ngram.simulator import simulate
from nim_specdec_lab.suffix.simulator import SuffixParams, simulate_suffix

SUFFIX_POINTS = (
    SuffixParams(8),
    SuffixParams(24),
    SuffixParams(8, max_cached_requests=0),
    SuffixParams(16, min_token_prob=0.3),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--prompt", type=int, default=1000)
    parser.add_argument("--output", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    trace = synthetic_trace(args.requests, args.prompt, args.output, seed=0)
    total = args.requests * (args.prompt + args.output)
    outputs = args.requests * args.output
    grid = default_grid()
    suffix_times: dict[SuffixParams, list[float]] = {p: [] for p in SUFFIX_POINTS}
    suffix_cpu: dict[SuffixParams, list[float]] = {p: [] for p in SUFFIX_POINTS}
    ngram_points, builds = [], []
    for _ in range(args.repeats):
        for params in SUFFIX_POINTS:
            t0, c0 = time.perf_counter(), time.process_time()
            simulate_suffix(trace, params)
            suffix_times[params].append(time.perf_counter() - t0)
            suffix_cpu[params].append(time.process_time() - c0)
        t0 = time.perf_counter()
        corpus = build_corpus(trace, max_ngram=max(p.max_n for p in grid))
        builds.append(time.perf_counter() - t0)
        for params in grid:
            t0 = time.perf_counter()
            simulate(corpus, params)
            ngram_points.append(time.perf_counter() - t0)

    print(f"trace: {args.requests} requests, {total:,} tokens ({outputs:,} output), {args.repeats} repeats")
    for params, times in suffix_times.items():
        t, c = statistics.median(times), statistics.median(suffix_cpu[params])
        print(
            f"suffix k={params.k} cached={params.max_cached_requests} min_prob={params.min_token_prob}: "
            f"median {t:.2f} s wall ({c:.2f} s CPU), {total / t:,.0f} tokens/s wall, {total / c:,.0f} tokens/s CPU "
            f"({outputs / t:,.0f} output tokens/s wall)"
        )
    all_suffix = statistics.median([t for times in suffix_times.values() for t in times])
    ngram = statistics.median(ngram_points) + statistics.median(builds) / len(grid)
    all_cpu = statistics.median([c for cpu in suffix_cpu.values() for c in cpu])
    print(
        f"suffix, median over its settings: {total / all_suffix:,.0f} tokens/s wall, {total / all_cpu:,.0f} tokens/s CPU"  # noqa: E501
    )
    print(f"n-gram, {len(grid)} settings, table build amortized: {total / ngram:,.0f} tokens/s per setting")
    print(f"ratio n-gram / suffix: {all_suffix / ngram:.1f}")


if __name__ == "__main__":
    main()
