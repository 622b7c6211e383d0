"""Hostile `nim-specdec plan` cases: environment, vLLM arguments and model files drawn from a random source,
run in-process, and the rules every outcome must follow.

Shared by tests/contract/test_fuzz_plan.py (hypothesis, bounded) and bench/fuzz_plan.py (10,000+ cases, counts by
exit code). In-process because a subprocess per case would cost a second each.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import shlex
import shutil
import struct
from dataclasses import dataclass, field
from pathlib import Path

from nim_specdec.cli.main import main

NUMBERS = [
    "0",
    "1",
    "-1",
    "4",
    "0.5",
    "1.5",
    "NaN",
    "nan",
    "Infinity",
    "-Infinity",
    "inf",
    "1e999",
    "-1e999",
    "1e-999",
    "9" * 5000,
    "-" + "9" * 400,
    "0x10",
    "1_000",
    "",
    " ",
    "abc",
    "4k",
    "32K",
    "1e3",
    "true",
    "null",
    "[]",
    "{}",
    "\u0661\u0662",
    "1" + "0" * 30,
]
JSON_NUMBERS = [
    "0",
    "1",
    "-1",
    "4",
    "0.5",
    "NaN",
    "Infinity",
    "-Infinity",
    "1e999",
    "9" * 5000,
    '"4"',
    '"abc"',
    "true",
    "null",
    "[]",
    "{}",
    "[" * 3000 + "]" * 3000,
    "1" + "0" * 30,
    "-0",
    "1e-400",
]
ENGINE_KEYS = [
    "max_num_seqs",
    "gpu_memory_utilization",
    "max_model_len",
    "tensor_parallel_size",
    "max_num_batched_tokens",
    "swap_space",
    "dtype",
    "kv_cache_dtype",
    "block_size",
    "seed",
]
SPEC_KEYS = [
    "num_speculative_tokens",
    "prompt_lookup_max",
    "prompt_lookup_min",
    "draft_tensor_parallel_size",
    "method",
    "model",
]
METHODS = ['"ngram"', '"eagle3"', '"draft_model"', '"mtp"', '"eagle"', '"medusa"', '"bogus"', "3", "null"]
TEXT = ["", " ", "x", "\x1b[31mred", "line\nbreak", "a" * 5000, "\u202e", "'", '"', "{", "--", "-", "é", "\t"]
FLAGS = [
    "--max-num-seqs",
    "--gpu-memory-utilization",
    "--max-model-len",
    "--tensor-parallel-size",
    "--port",
    "--speculative-config",
    "--speculative-config.num_speculative_tokens",
    "--speculative-config.method",
    "--dtype",
    "--kv-cache-dtype",
    "--api-key",
    "--model",
    "--served-model-name",
    "--max-num-batched-tokens",
]
CONFIG_NUMBER_KEYS = [
    "hidden_size",
    "vocab_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "max_position_embeddings",
    "intermediate_size",
    "num_nextn_predict_layers",
    "kv_lora_rank",
    "draft_vocab_size",
    "target_hidden_size",
    # Keys the launcher carries but never computes with: NaN and Infinity are taken there, as Python writes them.
    "time_step_limit",
    "rope_theta",
]
LLAMA = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 64,
    "vocab_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 128,
    "max_position_embeddings": 256,
    "torch_dtype": "bfloat16",
}
DRAFT = {**LLAMA, "num_hidden_layers": 1}
# Layers the 2-layer target has: vLLM's default auxiliary layers (2, L//2, L-3) name layer -1 (the pre-flight refuses).
EAGLE3 = {
    **LLAMA,
    "architectures": ["LlamaForCausalLMEagle3"],
    "num_hidden_layers": 1,
    "draft_vocab_size": 64,
    "eagle_aux_hidden_state_layer_ids": [0, 1, 2],
}


@dataclass
class Case:
    env: dict[str, str] = field(default_factory=dict)
    args: list[str] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)  # relative path -> bytes, under the case directory


@dataclass(frozen=True)
class Outcome:
    code: int
    stdout: str
    stderr: str


GOOD = {
    "max_num_seqs": ["4", "8"],
    "gpu_memory_utilization": ["0.5", "0.9"],
    "max_model_len": ["128", "256", '"1k"'],
    "tensor_parallel_size": ["1"],
    "max_num_batched_tokens": ["512"],
    "swap_space": ["0", "4"],
    "dtype": ['"auto"'],
    "kv_cache_dtype": ['"auto"', '"fp8"'],
    "block_size": ["16"],
    "seed": ["0"],
    "num_speculative_tokens": ["1", "3"],
    "prompt_lookup_max": ["4"],
    "prompt_lookup_min": ["1"],
    "draft_tensor_parallel_size": ["1"],
    "method": ['"ngram"', '"eagle3"', '"draft_model"'],
    "model": ['"{dir}/draft"', '"draft"', '"' + "d" * 300 + '"', '"/' + "d" * 300 + '"', '"../x"'],
}
# How often a drawn value is a hostile one rather than a plausible one: low enough that most cases get
# through the configuration and reach the model files and the pre-flight checks.
HOSTILE = 0.25


def _json_value(rnd: random.Random, key: str = "") -> str:
    if key in GOOD and rnd.random() > HOSTILE:
        return rnd.choice(GOOD[key])
    return rnd.choice(JSON_NUMBERS + METHODS + ['"' + rnd.choice(TEXT).replace('"', "") + '"'])


def _json_object(rnd: random.Random, keys: list[str], extra: str = "") -> str:
    items = []
    for _ in range(rnd.randint(0, 4)):
        key = rnd.choice(keys)
        items.append(f'"{key}": {_json_value(rnd, key)}')
    if extra:
        items.append(extra)
    return "{" + ", ".join(items) + "}"


def _spec_json(rnd: random.Random) -> str:
    return _json_object(rnd, SPEC_KEYS, f'"method": {rnd.choice(METHODS)}' if rnd.random() < 0.8 else "")


def _config(rnd: random.Random, base: dict) -> bytes:
    kind = rnd.random()
    if kind < 0.1:
        return rnd.choice([b"", b"not json", b"[1, 2]", b"\xff\xfe", b"[" * 100000, b"null", b'{"a": NaN}'])
    text = json.dumps(base)
    for _ in range(rnd.randint(1, 3)):
        key = rnd.choice(CONFIG_NUMBER_KEYS)
        text = text[:-1] + f', "{key}": {rnd.choice(JSON_NUMBERS)}' + "}"
    if rnd.random() < 0.1:
        text = text[:-1] + ', "text_config": ' + rnd.choice(["[]", "3", '{"hidden_size": "x"}', "{}"]) + "}"
    if rnd.random() < 0.1:
        text = (
            text[:-1]
            + ', "rope_scaling": '
            + rnd.choice(['{"factor": "x", "rope_type": "linear"}', '{"factor": 1e999, "type": "dynamic"}', "[]"])
            + "}"
        )
    return text.encode()


def _safetensors(rnd: random.Random) -> bytes:
    kind = rnd.random()
    if kind < 0.1:
        return rnd.choice([b"", b"short", struct.pack("<Q", 2**63) + b"{}", struct.pack("<Q", 50) + b"{}"])
    header = rnd.choice(
        [
            {"lm_head.weight": {"dtype": "BF16", "shape": [128, 64], "data_offsets": [0, 16384]}},
            {
                "midlayer.self_attn.q_proj.weight": {"dtype": "BF16", "shape": [64, 128], "data_offsets": [0, 16384]},
                "d2t": {"dtype": "I64", "shape": [64], "data_offsets": [16384, 16896]},
            },
            {"x": {"dtype": "BF16", "shape": ["a"], "data_offsets": [0, 1]}},
            {"x": {"dtype": "BF16", "shape": [10**400], "data_offsets": [0, 10**400]}},
            {"x": {"dtype": "BF16", "shape": [1], "data_offsets": [0]}},
            {"x": []},
            [],
            {"__metadata__": {"format": "pt"}},
        ]
    )
    raw = json.dumps(header).encode() if rnd.random() < 0.9 else rnd.choice([b"{bad", b"[" * 50000, b'{"x": NaN}'])
    return struct.pack("<Q", len(raw)) + raw


def _index(rnd: random.Random) -> bytes:
    target = rnd.choice(
        [
            "model.safetensors",
            "../outside.safetensors",
            "/etc/hostname",
            "sub/../../x.safetensors",
            "",
            3,
            None,
            "a" * 300,
        ]
    )
    doc = rnd.choice(
        [
            {"weight_map": {"lm_head.weight": target}},
            {"weight_map": []},
            {},
            {"metadata": {"total_size": rnd.choice([1, -1, "x", 1e308])}, "weight_map": {"a": target}},
        ]
    )
    return json.dumps(doc).encode()


def random_case(rnd: random.Random) -> Case:
    case = Case()
    case.files["target/config.json"] = _config(rnd, LLAMA) if rnd.random() < 0.2 else json.dumps(LLAMA).encode()
    draft_base = rnd.choice([DRAFT, EAGLE3])
    case.files["draft/config.json"] = (
        _config(rnd, draft_base) if rnd.random() < 0.2 else json.dumps(draft_base).encode()
    )
    if rnd.random() < 0.5:
        case.files["draft/model.safetensors"] = _safetensors(rnd)
    if rnd.random() < 0.1:
        case.files["draft/model.safetensors.index.json"] = _index(rnd)
    env = case.env
    env["NIM_MODEL_PATH"] = rnd.choice(
        ["{dir}/target"] * 30
        + [
            "{dir}/missing",
            "relative",
            "hf://org/name",
            "s3://b/p?token=zzzsecret",
            "{dir}/target/config.json",
            "/" + "a" * 300,
            "{dir}/" + "a/" * 3000,
        ]
    )
    if rnd.random() < 0.9:
        env["NIM_SPECDEC_ENABLE"] = rnd.choice(["1"] * 8 + ["0", "yes", "maybe", ""])
    if rnd.random() < 0.6:
        env["NIM_DRAFT_MODEL_PATH"] = rnd.choice(["{dir}/draft"] * 20 + ["{dir}/missing", "hf://o/n", "ftp://x", ""])
    if rnd.random() < 0.6:
        spec = _spec_json(rnd) if rnd.random() < 0.7 else json.dumps(_spec_json(rnd))
        engine = _json_object(rnd, ENGINE_KEYS, f'"speculative_config": {spec}')
        env["NIM_SPECDEC_ARGS"] = engine if rnd.random() < 0.95 else rnd.choice(TEXT + ["[" * 5000, "NaN", "{}"])
    for name, values in (
        ("NIM_MAX_MODEL_LEN", NUMBERS),
        ("NIM_SERVER_PORT", NUMBERS),
        ("NIM_LOG_LEVEL", ["info", "debug", "LOUD", ""]),
        ("NIM_SPECDEC_PREFLIGHT", ["error", "warn", "off", "compatibility=warn", "x=y", "memory=off"]),
        ("NIM_CACHE_PATH", ["{dir}/cache", "/", "rel", "{dir}/" + "d" * 300, "/etc"]),
        ("NIM_WORKSPACE", ["{dir}/ws", "/usr", "x"]),
        ("NIM_DOWNLOAD_TIMEOUT", NUMBERS),
        ("NIM_DOWNLOAD_RETRIES", NUMBERS),
        ("NIM_CACHE_LOCK_TIMEOUT", NUMBERS),
        ("NIM_DOWNLOAD_CONCURRENCY", NUMBERS),
        ("NIM_CAPTURE_ENABLE", ["1", "0", "x"]),
        (
            "NIM_CAPTURE_ARGS",
            [
                '{"path": "{dir}/cap/c.jsonl"}',
                '{"path": "rel"}',
                "[",
                '{"format": 1}',
                '{"endpoint_pattern": "("}',
                '{"path": "/' + "p" * 5000 + '"}',
            ],
        ),
        ("NIM_SERVED_MODEL_NAME", TEXT),
        ("NIM_JSONL_LOGGING", ["1", "0", "2"]),
        ("HF_TOKEN", ["test", "hf_" + "s" * 20]),
    ):
        if rnd.random() < 0.05:
            env[name] = rnd.choice(values)
    if rnd.random() < 0.2:
        pieces = [_flag_and_value(rnd) for _ in range(rnd.randint(1, 3))]
        pieces = [f"{flag} {shlex.quote(value)}" for flag, value in pieces]
        env["NIM_PASSTHROUGH_ARGS"] = " ".join(pieces) if rnd.random() < 0.9 else "'unbalanced"
    for _ in range(rnd.randint(0, 3)):
        flag, value = _flag_and_value(rnd)
        case.args += [f"{flag}={value}"] if rnd.random() < 0.3 else [flag, value]
    return case


def _flag_and_value(rnd: random.Random) -> tuple[str, str]:
    flag = rnd.choice(FLAGS)
    if flag == "--speculative-config":
        return flag, _spec_json(rnd)
    key = flag.removeprefix("--speculative-config.").removeprefix("--").replace("-", "_")
    if key in GOOD and rnd.random() > HOSTILE:
        return flag, rnd.choice(GOOD[key]).strip('"')
    if flag.startswith("--speculative-config."):
        return flag, rnd.choice(NUMBERS[:20] + METHODS)
    return flag, rnd.choice(NUMBERS + TEXT)


def _fill(text: str, directory: Path) -> str:
    return text.replace("{dir}", str(directory))


def run_case(case: Case, directory: Path) -> Outcome:
    """Write the case's files under `directory` (emptied first) and run `plan` in this process."""
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    for rel, data in case.files.items():
        path = directory / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(directory),
        **{k: _fill(v, directory) for k, v in case.env.items()},
    }
    env.setdefault("NIM_CACHE_PATH", str(directory / "cache"))
    saved = dict(os.environ)
    out, err = io.StringIO(), io.StringIO()
    try:
        os.environ.clear()
        os.environ.update(env)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["plan", *[_fill(a, directory) for a in case.args]])
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return Outcome(code, out.getvalue(), err.getvalue())


def _no_constant(name: str):
    raise ValueError(f"{name} in the printed plan")


def problem(outcome: Outcome) -> str | None:
    """Why an outcome breaks the rules, or None: exit 0, 2 or 3; on failure exactly one error line (the other
    stderr lines being log lines); on success a plan that is valid JSON without NaN or Infinity."""
    if outcome.code not in (0, 2, 3):
        return f"exit {outcome.code}: {outcome.stderr.strip()[-500:]}"
    lines = outcome.stderr.splitlines()
    errors = [line for line in lines if line.startswith("nim-specdec: error: ")]
    others = [line for line in lines if not line.startswith("nim-specdec: error: ")]
    for line in others:
        if not (
            line.startswith(("WARNING nim-specdec: ", "INFO nim-specdec: ", "nim-specdec: warning: "))
            or _is_json_log(line)
        ):
            return f"stray stderr line: {line[:300]!r}"
    if outcome.code != 0:
        return None if len(errors) == 1 else f"{len(errors)} error lines on exit {outcome.code}"
    if errors:
        return "error line on exit 0"
    try:
        json.loads(outcome.stdout, parse_constant=_no_constant)
    except ValueError as err:
        return f"plan is not valid JSON: {err}"
    return None


def _is_json_log(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False
