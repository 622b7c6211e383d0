"""How long the pre-flight checks take, all of them together, from files on disk.

The target is 50 ms for a draft with hundreds of tensors. This writes a Llama-3.1-8B-sized
target (291 tensors in 4 shards with an index) and two drafts in a temporary directory:
a `draft_model` draft of 40 layers (363 tensors in 4 shards) and a one-layer EAGLE3 draft,
all as real safetensors headers over sparse files (no weight bytes are written or read).
It then times `run_preflight` end to end, with an injected GPU reading, and prints medians
next to the time of just parsing the config.json files, measured in the same run.

    PYTHONPATH=src python bench/bench_preflight.py [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import struct
import sys
import tempfile
import time
from pathlib import Path

ELEMENT_BYTES = {"BF16": 2, "I64": 8, "BOOL": 1}


def write_safetensors(path: Path, tensors: dict) -> int:
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, (dtype, shape) in tensors.items():
        size = ELEMENT_BYTES[dtype]
        for dim in shape:
            size *= dim
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    with path.open("wb") as fh:
        fh.write(struct.pack("<Q", len(raw)) + raw)
        fh.truncate(8 + len(raw) + offset)  # sparse: the size is declared, nothing is written
    return offset


def llama_tensors(layers: int, hidden: int, inter: int, vocab: int, kv: int = 8, head_dim: int = 128) -> dict:
    t = {
        "model.embed_tokens.weight": ("BF16", (vocab, hidden)),
        "model.norm.weight": ("BF16", (hidden,)),
        "lm_head.weight": ("BF16", (vocab, hidden)),
    }
    for i in range(layers):
        p = f"model.layers.{i}."
        t.update(
            {
                p + "self_attn.q_proj.weight": ("BF16", (hidden, hidden)),
                p + "self_attn.k_proj.weight": ("BF16", (kv * head_dim, hidden)),
                p + "self_attn.v_proj.weight": ("BF16", (kv * head_dim, hidden)),
                p + "self_attn.o_proj.weight": ("BF16", (hidden, hidden)),
                p + "mlp.gate_proj.weight": ("BF16", (inter, hidden)),
                p + "mlp.up_proj.weight": ("BF16", (inter, hidden)),
                p + "mlp.down_proj.weight": ("BF16", (hidden, inter)),
                p + "input_layernorm.weight": ("BF16", (hidden,)),
                p + "post_attention_layernorm.weight": ("BF16", (hidden,)),
            }
        )
    return t


def write_model(directory: Path, config: dict, tensors: dict, shards: int) -> int:
    directory.mkdir(parents=True)
    (directory / "config.json").write_text(json.dumps(config))
    names, weight_map, total = list(tensors), {}, 0
    for i in range(shards):
        shard = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        part = {n: tensors[n] for n in names[i::shards]}
        total += write_safetensors(directory / shard, part)
        weight_map.update(dict.fromkeys(part, shard))
    (directory / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map})
    )
    return len(tensors)


LLAMA_8B = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "num_hidden_layers": 32,
    "vocab_size": 128256,
    "torch_dtype": "bfloat16",
    "max_position_embeddings": 131072,
    "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192},
}
DRAFT_40L = {
    **LLAMA_8B,
    "hidden_size": 2048,
    "intermediate_size": 8192,
    "num_attention_heads": 16,
    "num_hidden_layers": 40,
}
EAGLE3 = {**LLAMA_8B, "architectures": ["LlamaForCausalLMEagle3"], "num_hidden_layers": 1, "draft_vocab_size": 32000}


def eagle3_tensors() -> dict:
    h, i = 4096, 14336
    t = {
        "fc.weight": ("BF16", (h, 3 * h)),
        "norm.weight": ("BF16", (h,)),
        "lm_head.weight": ("BF16", (32000, h)),
        "d2t": ("I64", (32000,)),
        "t2d": ("BOOL", (128256,)),
    }
    for name, shape in [
        ("self_attn.q_proj", (h, 2 * h)),
        ("self_attn.k_proj", (1024, 2 * h)),
        ("self_attn.v_proj", (1024, 2 * h)),
        ("self_attn.o_proj", (h, h)),
        ("mlp.gate_proj", (i, h)),
        ("mlp.up_proj", (i, h)),
        ("mlp.down_proj", (h, i)),
    ]:
        t[f"midlayer.{name}.weight"] = ("BF16", shape)
    return t


def plan(method: str, target: Path, draft: Path) -> dict:
    return {
        "speculative": {
            "enabled": True,
            "method": method,
            "config": {"method": method, "model": str(draft), "num_speculative_tokens": 3},
        },
        "target": {"local_dir": str(target)},
        "draft": {"name": "draft", "source": str(draft), "local_dir": str(draft)},
        "engine_args": {"max_model_len": 8192},
    }


def median_ms(fn, repeat: int) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.9)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    start = time.perf_counter()
    from nim_specdec.preflight import StaticProbe, run_preflight

    import_ms = (time.perf_counter() - start) * 1000
    gpu = StaticProbe([(85520809984, 512 * 1024**2, "NVIDIA H100 80GB HBM3")])
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        n_target = write_model(root / "target", LLAMA_8B, llama_tensors(32, 4096, 14336, 128256), 4)
        n_draft = write_model(root / "draft40", DRAFT_40L, llama_tensors(40, 2048, 8192, 128256, head_dim=128), 4)
        n_eagle = write_model(root / "eagle3", EAGLE3, eagle3_tensors(), 1)
        cases = [("draft_model", root / "draft40", n_draft), ("eagle3", root / "eagle3", n_eagle)]
        print(f"import nim_specdec.preflight: {import_ms:.1f} ms (once)")
        print(f"target: {n_target} tensors in 4 shards; {args.repeat} runs each, warm page cache")
        for method, draft, n in cases:
            p = plan(method, root / "target", draft)
            section = run_preflight(p, {}, gpu)
            results = {c["name"]: c["result"] for c in section["checks"]}
            assert all(r == "pass" for r in results.values()), results
            checks_med, checks_p90 = median_ms(lambda: run_preflight(p, {}, gpu), args.repeat)
            configs_med, _ = median_ms(
                lambda: [json.loads((d / "config.json").read_text()) for d in (root / "target", draft)], args.repeat
            )
            print(
                f"{method:12s} draft {n:4d} tensors: all checks median {checks_med:6.2f} ms, p90 {checks_p90:6.2f} ms; "
                f"reading the two config.json alone {configs_med:5.2f} ms (ratio {checks_med / configs_med:4.1f}x); "
                f"target 50 ms: {'met' if checks_p90 < 50 else 'NOT met'}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
