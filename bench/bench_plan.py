"""Median wall time of `nim-specdec plan` (the guide's n-gram example and a local draft), beside
`python -c "import pydantic"` as a baseline, alternated in one run.

    python bench/bench_plan.py [--runs 15]
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

NGRAM = '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 1}'


def _model(directory: Path, architectures: list[str]) -> str:
    directory.mkdir(parents=True)
    (directory / "config.json").write_text(json.dumps({"architectures": architectures, "hidden_size": 128}))
    return str(directory)


def _time(cmd: list[str], env: dict) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        target = _model(root / "target", ["LlamaForCausalLM"])
        draft = _model(root / "draft", ["LlamaForCausalLMEagle3"])
        base = {**os.environ, "NIM_CACHE_PATH": str(root / "cache")}
        plan = [sys.executable, "-m", "nim_specdec", "plan"]
        cases = {
            "import pydantic (baseline)": ([sys.executable, "-c", "import pydantic"], base),
            "plan: guide n-gram example": (
                plan + ["--speculative-config", NGRAM],
                {**base, "NIM_MODEL_PATH": "hf://meta-llama/Llama-3.1-8B-Instruct"},
            ),
            "plan: local EAGLE3 draft": (
                plan
                + [
                    "--speculative-config",
                    '{"method": "eagle3", "model": "eagle3_draft", "num_speculative_tokens": 3}',
                ],
                {**base, "NIM_MODEL_PATH": target, "NIM_DRAFT_MODEL_PATH": draft},
            ),
        }
        samples: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(runs):  # alternate so that machine noise hits every case alike
            for name, (cmd, env) in cases.items():
                samples[name].append(_time(cmd, env))
    baseline = statistics.median(samples["import pydantic (baseline)"])
    print(f"{'case':32} {'median s':>9} {'x baseline':>10}   ({runs} runs each, alternated)")
    for name, values in samples.items():
        median = statistics.median(values)
        print(f"{name:32} {median:9.3f} {median / baseline:10.2f}")


if __name__ == "__main__":
    main()
