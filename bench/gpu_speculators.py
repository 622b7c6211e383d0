"""vLLM's V2 n-gram and 0.34 suffix speculators on a GPU against the lab's models: drafts compared one by one.

The tests run the same kernels in Triton's interpreter on the CPU; this script runs them compiled, on a
CUDA device, with more and larger cases (the default 2**20-token suffix corpus, 4096-token rows). It
prints, per release and speculator, the drafts compared and how many differ, and writes the first
differences to --out. vLLM need not be installed: the speculator sources are read from a folder, made
here beforehand from the installed release and the wheels:

    PYTHONPATH=src:tests:tests/lab/suffix python bench/gpu_speculators.py --extract build/gpu-sources
    PYTHONPATH=src:tests/lab/suffix python bench/gpu_speculators.py --sources build/gpu-sources [--device cuda]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

RELEASES = ("0.32.0", "0.34.0")


def extract(folder: Path) -> None:
    from vllm_gpu_speculators import NGRAM_PATH, SUFFIX_PATH

    from vllm_release_source import source

    for release in RELEASES:
        for path in (NGRAM_PATH, SUFFIX_PATH):
            try:
                text = source(release, path)
            except (KeyError, FileNotFoundError):
                continue  # 0.32 has no native suffix speculator
            target = folder / release / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
            print(f"{release}: {path}")


def ngram_cases(module, device, rng: random.Random, configs: int):
    import vllm_gpu_speculators as g

    from nim_specdec_lab.ngram.proposer_v2 import propose_v2

    for _ in range(configs):
        k, min_n = rng.choice([1, 2, 3, 4, 5, 8]), rng.randint(1, 4)
        max_n, length = min_n + rng.randint(0, 3), rng.choice([16, 64, 100, 300, 1100, 4096])
        drafter = g.NgramDrafter(module, k, min_n, max_n, length, 32, device)
        vocab = rng.choice([1, 2, 3, 6, 50000])
        contexts = [[rng.randrange(vocab) for _ in range(rng.randint(1, min(length, 400)))] for _ in range(32)]
        for context, got in zip(contexts, drafter.propose(contexts, rng.sample(range(32), 32))):
            yield (k, min_n, max_n, length), context, got, propose_v2(context, min_n, max_n, k)


def suffix_cases(module, device, rng: random.Random, configs: int):
    import vllm_gpu_speculators as g

    from nim_specdec_lab.suffix.gpu_speculator import GpuSuffixParams, GpuSuffixState

    for _ in range(configs):
        k, depth = rng.choice([1, 3, 5, 8]), rng.choice([1, 2, 4, 24, 32])
        corpus, length = rng.choice([16, 300, 4096, 1 << 20]), rng.choice([64, 200, 1100, 4096])
        cached, vocab, slots = rng.choice([0, 10000, 10000]), rng.choice([2, 3, 5, 50]), 32
        drafter = g.SuffixDrafter(module, k, depth, corpus, length, slots, device, max_cached=cached)
        model = GpuSuffixState(GpuSuffixParams(k, depth, corpus, cached))
        for docs, contexts in g.suffix_batches(rng, vocab, length, 8, slots):
            drafter.finish(docs)
            model.ingest([tokens[max(p - 3, 0) :] for _, _, tokens, p in sorted(docs)])
            for context, got in zip(contexts, drafter.propose(contexts, rng.sample(range(slots), slots))):
                yield (k, depth, corpus, length, cached), context, list(got), list(model.propose(context, context[-1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--extract", type=Path, help="write the speculator sources of each release here, then stop")
    parser.add_argument("--sources", type=Path, default=Path("build/gpu-sources"))
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--configs", type=int, default=40)
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", ".")) / "gpu_speculators.json")
    args = parser.parse_args()
    if args.extract:
        extract(args.extract)
        return 0
    if args.device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"  # before Triton is imported
    import torch
    import vllm_gpu_speculators as g

    if args.device == "cpu":
        g.interpreter_masks_as_bool()
    device = torch.device(args.device)
    print(f"device: {torch.cuda.get_device_name(0) if args.device == 'cuda' else 'cpu (Triton interpreter)'}")
    summary, failures = [], []
    for release in RELEASES:
        for name, path, cases in (("ngram", g.NGRAM_PATH, ngram_cases), ("suffix", g.SUFFIX_PATH, suffix_cases)):
            file = args.sources / release / path
            if not file.is_file():
                continue
            module = g.load(file.read_text(), Path(os.environ.get("TMPDIR", "/tmp")), f"vllm_{name}_{release[2:4]}")
            start, compared, differ = time.perf_counter(), 0, 0
            for setting, context, got, expected in cases(module, device, random.Random(2026), args.configs):
                compared += 1
                if got != expected:
                    differ += 1
                    if len(failures) < 50:
                        failures.append(
                            {"release": release, "speculator": name, "setting": setting, "context": context}
                            | {"kernels": got, "model": expected}
                        )
            seconds = time.perf_counter() - start
            summary.append({"release": release, "speculator": name, "compared": compared, "differ": differ})
            print(f"{release} {name:6s}: {compared} drafts compared, {differ} differ ({seconds:.1f} s)")
    args.out.write_text(json.dumps({"summary": summary, "first_differences": failures}, indent=1))
    return 1 if any(s["differ"] for s in summary) else 0


if __name__ == "__main__":
    sys.exit(main())
