"""Every SGLang command the launcher writes, for the built-in models and the guide's examples, resolved by SGLang
0.5.23's own `prepare_server_args` + `resolve_once` (one child run for the module); the values SGLang changes
silently, as measured; and the harness failing on a bad argv. Needs SGLang's interpreter (conftest.sglang_python)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from nim_specdec.engines.sglang.command import launch_command, server_arguments
from nim_specdec.engines.sglang.native_args import read_native_args
from nim_specdec.engines.sglang.resolution import platform_refusal, run_resolver, silent_changes
from nim_specdec.engines.sglang.translation import merge_native, translate_config
from nim_specdec.errors import ConfigError

ROOT = Path(__file__).resolve().parents[3]
BUILTINS = sorted((ROOT / "configs" / "builtin_specdec").glob("*.json"))
DATA = ROOT / "tests" / "data" / "model_configs"  # the targets' and drafts' real config.json
LLAMA = DATA / "meta-llama--Llama-3.1-8B-Instruct"
EAGLE3_DRAFT = DATA / "yuhuili--EAGLE3-LLaMA3.1-Instruct-8B"
# Targets SGLang resolves on the CPU, one per method: the same speculative flags are checked on them where the
# built-in's own target needs what the CPU platform lacks (see resolution.PLATFORM_REFUSALS).
STAND_IN = {"eagle3": LLAMA, "ngram": LLAMA, "mtp": DATA / "deepseek-ai--DeepSeek-V3", "dspark": LLAMA}

# The guide's examples (tests/contract/test_guide_examples.py holds the same): the speculative config each gives,
# where it gives it, and the target it is served on here.
LLAMA_BUILTIN = json.loads((ROOT / "configs" / "builtin_specdec" / "llama-3.1-8b-instruct.json").read_text())[
    "speculative_config"
]
NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 1}
EAGLE3 = {"method": "eagle3", "model": "eagle3_draft", "num_speculative_tokens": 3}
GUIDE = {
    "enable the built-in (Llama 3.1 8B, EAGLE3)": (None, LLAMA, LLAMA_BUILTIN),
    "NIM_SPECDEC_ARGS: n-gram": (None, LLAMA, NGRAM),
    "model-free n-gram (--speculative-config)": (["--speculative-config", json.dumps(NGRAM)], LLAMA, None),
    "model-free MTP (--speculative-config)": (
        ["--speculative-config", '{"method": "mtp", "num_speculative_tokens": 1}'],
        DATA / "deepseek-ai--DeepSeek-V3",
        None,
    ),
    "bring your own EAGLE3 draft": (["--speculative-config", json.dumps(EAGLE3)], LLAMA, None),
}


def _draft_dir(entry: dict) -> Path:
    """The built-in draft's config where the tests hold it, else the Llama EAGLE3 draft's (SGLang reads only its
    architecture here)."""
    source = (entry.get("draft") or {}).get("source", "")
    held = DATA / source.removeprefix("hf://").split("@")[0].replace("/", "--")
    return held if (held / "config.json").is_file() else EAGLE3_DRAFT


def _materialized(config: dict, draft: Path) -> dict:
    """The config as the launcher hands it over: the bare draft name rewritten to the draft's absolute path."""
    return {**config, "model": str(draft)} if "model" in config else dict(config)


def _command(target: Path, config: dict | None, argv: list[str], draft: Path = EAGLE3_DRAFT):
    native = read_native_args(argv)
    if native.vllm_config is not None:
        config = json.loads(native.vllm_config)
    flags = merge_native(translate_config(_materialized(config, draft)) if config else None, native)
    command = launch_command("python", str(target), "127.0.0.1", 8000, "served", flags.argv(), native.other)
    return flags, server_arguments(command), config


CASES: dict[str, tuple] = {}
for path in BUILTINS:
    entry = json.loads(path.read_text())
    config = entry["speculative_config"]
    CASES[f"builtin {path.stem}"] = _command(DATA / entry["test_config"], config, [], _draft_dir(entry))
    stand_in = STAND_IN[config["method"]]
    CASES[f"stand-in {path.stem}"] = _command(stand_in, config, [])
for name, (argv, target, config) in GUIDE.items():
    CASES[f"guide {name}"] = _command(target, config, argv or [])
MEASURED = {
    "EAGLE3 with 9 draft tokens": [
        "--speculative-algorithm",
        "EAGLE3",
        "--speculative-draft-model-path",
        str(EAGLE3_DRAFT),
        "--speculative-num-steps",
        "3",
        "--speculative-eagle-topk",
        "1",
        "--speculative-num-draft-tokens",
        "9",
    ],
    "adaptive with top-k 4": [
        "--speculative-algorithm",
        "EAGLE3",
        "--speculative-draft-model-path",
        str(EAGLE3_DRAFT),
        "--speculative-adaptive",
        "--speculative-num-steps",
        "3",
        "--speculative-eagle-topk",
        "4",
        "--speculative-num-draft-tokens",
        "8",
    ],
    "NEXTN on a Llama": ["--speculative-algorithm", "NEXTN"],
}
BAD = {
    "a value SGLang's parser refuses": ["--model-path", str(LLAMA), "--speculative-num-steps", "x"],
    "a combination SGLang's resolver refuses": [
        "--model-path",
        str(LLAMA),
        "--speculative-algorithm",
        "NGRAM",
        "--speculative-ngram-external-corpus-path",
        "/none.jsonl",
        "--speculative-ngram-external-sam-budget",
        "0",
    ],
}


@pytest.fixture(scope="module")
def resolved(sglang_python):
    argvs = [argv for _, argv, _ in CASES.values()]
    argvs += [["--model-path", str(LLAMA), *argv] for argv in MEASURED.values()]
    argvs += list(BAD.values())
    answers = run_resolver(sglang_python, argvs)
    names = [*CASES, *MEASURED, *BAD]
    return dict(zip(names, answers, strict=True))


@pytest.mark.parametrize("name", [n for n in CASES if not n.startswith("builtin")])
def test_sglang_accepts_the_command_and_serves_what_it_asks(resolved, name):
    flags, _, config = CASES[name]
    resolution = resolved[name]
    if config["method"] == "dspark":  # SGLang wants CUDA, NPU or XPU for it: the device is its only objection
        assert resolution.refusal == "ValueError: DSpark speculative decoding only supports CUDA, NPU or XPU device."
        return
    assert resolution.ok, resolution.refusal
    changes = silent_changes(dict(flags.fields), resolution)
    # Nothing the command asks is changed; what SGLang fills in unasked is listed (the batch cap at least).
    assert [c for c in changes if c.asked is not None] == []
    assert "--max-running-requests: asked unset, SGLang 0.5 serves 48" in "\n".join(c.line() for c in changes)


@pytest.mark.parametrize("name", [n for n in CASES if n.startswith("builtin")])
def test_each_builtin_is_accepted_or_refused_only_for_the_cpu_platform(resolved, name):
    flags, _, _ = CASES[name]
    resolution = resolved[name]
    if resolution.ok:
        assert [c for c in silent_changes(dict(flags.fields), resolution) if c.asked is not None] == []
    else:
        # Its speculative flags are checked on a stand-in target by the test above.
        assert platform_refusal(resolution), resolution.refusal


# The built-ins whose own target the CPU platform cannot resolve, whatever the speculative flags: sparse attention
# that wants CUDA (DeepSeek-V3.2, GLM-5), mxfp4 weights (gpt-oss), Mamba hybrids' cache snapshots (Nemotron 3,
# Qwen3-Next, Qwen3.5). Their flags are checked on a stand-in target.
PLATFORM_ONLY = {
    "deepseek-v3.2", "glm-5", "glm-5.1", "glm-5.2", "gpt-oss-20b", "gpt-oss-120b", "nemotron-3-nano-30b-a3b",
    "nemotron-3-super-120b-a12b", "nemotron-3-ultra-550b-a55b", "nemotron-3.5-lightning-30b-a3b",
    "qwen3-next-80b-a3b-thinking", "qwen3.5-27b",
}  # fmt: skip


def test_every_other_builtin_resolves_on_its_own_target(resolved):
    refused = {n.removeprefix("builtin ") for n in CASES if n.startswith("builtin") and not resolved[n].ok}
    assert refused == PLATFORM_ONLY
    assert len(BUILTINS) - len(refused) == 14


AUTO = "_handle_eagle_family.auto_params)"  # SGLang's choice of K for a Llama when none is given


@pytest.mark.parametrize(
    ("name", "lines"),
    [
        (
            "EAGLE3 with 9 draft tokens",
            ["--speculative-num-draft-tokens: asked 9, SGLang 0.5 serves 4 (its _handle_eagle_family)"],
        ),
        (
            "adaptive with top-k 4",
            ["--speculative-adaptive: asked on, SGLang 0.5 serves off (its _maybe_disable_adaptive)"],
        ),
        (
            "NEXTN on a Llama",
            [
                "--speculative-num-steps: asked unset, SGLang 0.5 serves 5 (its " + AUTO,
                "--speculative-eagle-topk: asked unset, SGLang 0.5 serves 4 (its " + AUTO,
                "--speculative-num-draft-tokens: asked unset, SGLang 0.5 serves 8 (its " + AUTO,
            ],
        ),
    ],
)
def test_the_measured_silent_changes_are_listed(resolved, name, lines):
    asked = read_native_args(MEASURED[name]).speculative_fields()
    shown = [c.line() for c in silent_changes(asked, resolved[name])]
    assert all(line in shown for line in lines), shown
    assert "--max-running-requests: asked unset, SGLang 0.5 serves 48 (its _handle_eagle_family)" in shown


@pytest.mark.parametrize(
    ("name", "refusal"),
    [
        ("a value SGLang's parser refuses", "sglang serve: error: argument --speculative-num-steps: invalid int value"),
        ("a combination SGLang's resolver refuses", "ValueError: --speculative-ngram-external-sam-budget must be"),
    ],
)
def test_the_harness_fails_on_a_bad_argv(resolved, name, refusal):
    resolution = resolved[name]
    assert not resolution.ok and resolution.refusal.startswith(refusal) and not platform_refusal(resolution)


def test_an_interpreter_without_sglang_is_refused_in_one_line():
    with pytest.raises(ConfigError) as caught:
        run_resolver(sys.executable, [["--model-path", str(LLAMA)]], timeout=120)
    assert str(caught.value).startswith(f"SGLang's resolver: {sys.executable} exited 1: ModuleNotFoundError")
