"""Wall time of `nim-specdec tune --decide` on a recorded run, a whole process per call (median, spread).

    python bench/bench_decide.py [--calls 7]

The recorded run: off and two candidates, five concurrencies, three rounds (tune's default), made by the
noise model of the lab's tests (nim_specdec_lab.noise_worlds, seed fixed); one candidate a true 1.2x (not
told apart from off in that world: the answer says how many rounds would tell it, the power figures that
cost the most), one equal to off. Each call is `python -m nim_specdec tune --decide RUNS --json` from a
cold interpreter, as a user re-deciding would run it; `python -c "import numpy"` is timed beside it as
the floor of any lab call, and `python -c "import scipy.special"` as the floor of any call that prints an
interval (the t quantiles and tails come from it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from nim_specdec_lab.noise_worlds import Machine, simulate, true_log_speedups
from nim_specdec_lab.tune.runs.rounds import order_of

CONCURRENCIES = (1, 2, 4, 8, 16)
SEED = 3  # a world where the 1.2x candidate is not told apart in three rounds: the power figures run
NAMES = ("off", "ngram-k4", "suffix-k4")


def recorded_lines(rounds: int = 3) -> list[str]:
    ratios = {1: [1.2] * len(CONCURRENCIES), 2: [1.0] * len(CONCURRENCIES)}
    orders = [order_of([0, 1, 2], r) for r in range(1, rounds + 1)]
    measured = simulate(Machine(), true_log_speedups(ratios, len(CONCURRENCIES)), orders, 1, SEED)
    lines = []
    for r, order in enumerate(orders):
        for p, k in enumerate(order, start=1):
            for i, c in enumerate(CONCURRENCIES):
                figure = round(float(measured[0, r, k, i]), 3)
                line = {"config": NAMES[k], "round": r + 1, "concurrency": c, "output_tokens_per_s": figure}
                lines.append(json.dumps(line | {"position": p}))
    return lines


def _time(cmd: list[str], env: dict) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=7)
    calls = parser.parse_args().calls
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp) / "runs.jsonl"
        runs.write_text("\n".join(recorded_lines()) + "\n")
        decide = [sys.executable, "-m", "nim_specdec", "tune", "--decide", str(runs), "--json"]
        floors = {
            "import numpy": [sys.executable, "-c", "import numpy"],
            "import scipy.special": [sys.executable, "-c", "import scipy.special"],
        }
        _time(decide, env)  # warm the page cache and the bytecode
        times: dict[str, list[float]] = {"tune --decide": [], **{name: [] for name in floors}}
        for _ in range(calls):  # interleaved: a busy stretch of the machine falls on all three alike
            times["tune --decide"].append(_time(decide, env))
            for name, cmd in floors.items():
                times[name].append(_time(cmd, env))
    for name, values in times.items():
        print(
            f"{name}: median {statistics.median(values):.3f} s, min {min(values):.3f} s, max {max(values):.3f} s "
            f"over {calls} calls"
        )
    ratio = [d / f for d, f in zip(times["tune --decide"], times["import numpy"])]
    print(f"tune --decide / import numpy, call by call: median {statistics.median(ratio):.2f}x")


if __name__ == "__main__":
    main()
