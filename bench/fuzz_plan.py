"""Fuzz `nim-specdec plan` with hostile environments, vLLM arguments and model files; print counts by exit code.

Every case must end in exit 0, 2 or 3 with one error line on failure and a plan that is valid JSON on
success (the rules of tests/fuzz_plan_cases.py). Cases run in this process (a subprocess each would cost
a second), from a seeded random source, so a run is repeatable.

    PYTHONPATH=src python bench/fuzz_plan.py [--cases 10000] [--seed 0] [--show 5]
"""

from __future__ import annotations

import argparse
import collections
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from fuzz_plan_cases import problem, random_case, run_case  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show", type=int, default=5, help="broken cases to print in full")
    args = parser.parse_args()
    rnd = random.Random(args.seed)
    codes: collections.Counter[int] = collections.Counter()
    broken = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.cases):
            case = random_case(rnd)
            outcome = run_case(case, Path(tmp) / "case")
            codes[outcome.code] += 1
            why = problem(outcome)
            if why:
                broken.append((i, case, why))
    elapsed = time.monotonic() - started
    print(f"{args.cases} cases (seed {args.seed}) in {elapsed:.1f} s")
    for code in sorted(codes):
        print(f"  exit {code}: {codes[code]}")
    print(f"  rule broken: {len(broken)}")
    for i, case, why in broken[: args.show]:
        print(
            f"case {i}: {why}\n  env={case.env}\n  args={case.args}\n  files={ {k: v[:120] for k, v in case.files.items()} }"  # noqa: E501
        )
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
