"""What the vLLM check costs: median wall time of `nim-specdec plan` and `plan --check-vllm` on the demo
model (n-gram, and an EAGLE3 draft), alternated in one run, and the check's own seconds as `serve` and
`prepare` pay them (the plan's `vllm_check.seconds`: importing vLLM plus its validation).

    python bench/bench_vllm_check.py [--runs 5]
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

from nim_specdec_lab.demo_model import make_demo_model

NGRAM = '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 1}'


def _run(cmd: list[str], env: dict) -> tuple[float, dict]:
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
    return time.perf_counter() - start, json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_demo_model(root / "demo")
        base = {
            **os.environ,
            "NIM_MODEL_PATH": str(root / "demo" / "target"),
            "NIM_CACHE_PATH": str(root / "cache"),
            "HF_HUB_OFFLINE": "1",
            "NIM_SPECDEC_ENABLE": "1",
        }
        cases = {
            "ngram": ({**base}, ["--speculative-config", NGRAM]),
            "eagle3": ({**base, "NIM_DRAFT_MODEL_PATH": str(root / "demo" / "draft-eagle3")}, []),
        }
        cmd = [sys.executable, "-m", "nim_specdec", "plan"]
        for name, (env, args) in cases.items():
            plain, checked, inner = [], [], []
            for _ in range(runs):
                plain.append(_run(cmd + args, env)[0])
                seconds, plan = _run(cmd + ["--check-vllm"] + args, env)
                checked.append(seconds)
                inner.append(plan["vllm_check"]["seconds"])
            p, c = statistics.median(plain), statistics.median(checked)
            print(
                f"{name}: plan {p:.2f} s, plan --check-vllm {c:.2f} s (+{c - p:.2f} s, x{c / p:.1f}); "
                f"the check inside serve/prepare: {statistics.median(inner):.2f} s (median of {runs})"
            )


if __name__ == "__main__":
    main()
