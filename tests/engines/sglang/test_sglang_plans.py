"""NIM_ENGINE=sglang through the real plan entry: every built-in (NIM_SPECDEC_ENABLE=1, NIM_MODEL_NAME) and the
guide's five examples planned by launch.resolve.plan_for (the pure build, SGLang's installation read at the edge),
then SGLang 0.5.23's own resolution run by the shell (launch.engine_check, one child for the module) on every
argv, its silent changes listed in the plan's warnings. The sources' files are the targets' and drafts' real
config.json (tests/data/model_configs), given as the facts a download would leave. Needs SGLang's interpreter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nim_specdec.launch.engine_check import NOT_FOR_SGLANG, with_sglang_resolution
from nim_specdec.launch.facts import read_config
from nim_specdec.launch.resolve import plan_for
from nim_specdec.plan.method.builtin import default_config_dir, load_registry
from nim_specdec.plan.plan_facts import Facts, SourceFacts

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data" / "model_configs"
LLAMA_DIR = DATA / "meta-llama--Llama-3.1-8B-Instruct"
EAGLE3_DIR = DATA / "yuhuili--EAGLE3-LLaMA3.1-Instruct-8B"
DEEPSEEK_DIR = DATA / "deepseek-ai--DeepSeek-V3"
REGISTRY = load_registry(default_config_dir())
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 1}
NGRAM_STRING_ARGS = json.dumps({"speculative_config": json.dumps(NGRAM)})
EAGLE3_ARG = '{"method": "eagle3", "model": "eagle3_draft", "num_speculative_tokens": 3}'

# The guide's five examples (as tests/contract/test_guide_plans.py writes them): environment, arguments, and where
# the target's and the draft's files are (source -> directory).
GUIDE: dict[str, tuple[dict[str, str], list[str], dict[str, Path]]] = {
    "builtin-eagle3": ({"NIM_SPECDEC_ENABLE": "1", "NIM_MODEL_NAME": LLAMA}, [], {}),
    "override-ngram-on-mtp": (
        {"NIM_SPECDEC_ENABLE": "1", "NIM_MODEL_NAME": "deepseek-ai/DeepSeek-V3", "NIM_SPECDEC_ARGS": NGRAM_STRING_ARGS},
        [],
        {},
    ),
    "model-free-ngram": ({"NIM_MODEL_PATH": f"hf://{LLAMA}"}, ["--speculative-config", json.dumps(NGRAM)], {}),
    "model-free-mtp": (
        {"NIM_MODEL_PATH": "ngc://org/model:tag"},
        ["--speculative-config", '{"method": "mtp", "num_speculative_tokens": 1}'],
        {"ngc://org/model:tag": DEEPSEEK_DIR},
    ),
    "own-eagle3-draft": (
        {"NIM_MODEL_PATH": f"hf://{LLAMA}", "NIM_DRAFT_MODEL_PATH": "hf://my-org/my-eagle3-draft"},
        ["--speculative-config", EAGLE3_ARG],
        {"hf://my-org/my-eagle3-draft": EAGLE3_DIR},
    ),
}
# The user's own SGLang argument over the translated K: SGLang serves 4 draft tokens for 3 steps, whatever is asked.
NATIVE = {
    "native-draft-tokens": (
        {"NIM_MODEL_PATH": f"hf://{LLAMA}", "NIM_DRAFT_MODEL_PATH": "hf://my-org/my-eagle3-draft"},
        ["--speculative-config", EAGLE3_ARG, "--speculative-num-draft-tokens", "9"],
        {"hf://my-org/my-eagle3-draft": EAGLE3_DIR},
    )
}
# The built-ins whose own target SGLang cannot resolve on the CPU, whatever the speculative flags (sparse attention
# wanting CUDA, mxfp4 weights, Mamba hybrids' cache snapshots): SGLang says so, and the plan says it could not judge.
PLATFORM_ONLY = {
    "deepseek-ai/DeepSeek-V3.2", "zai-org/GLM-5", "zai-org/GLM-5.1", "zai-org/GLM-5.2", "openai/gpt-oss-20b",
    "openai/gpt-oss-120b", "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8",
    "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16", "nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4",
    "Qwen/Qwen3-Next-80B-A3B-Thinking", "Qwen/Qwen3.5-27B",
}  # fmt: skip
NOT_JUDGED = "SGLang's resolver could not judge the command on the CPU"
BATCH_CAP = "--max-running-requests: asked unset, SGLang 0.5 serves "  # 48, 256 for DeepSeek-V4


def _by_name(source: str) -> Path | None:
    """The recorded config of a hub source (hf://org/name[@rev] -> org--name), where the tests hold it."""
    held = DATA / source.removeprefix("hf://").split("@")[0].replace("/", "--")
    return held if (held / "config.json").is_file() else None


def _source_facts(uri: str, directory: Path) -> SourceFacts:
    return SourceFacts(str(directory), read_config(directory, uri))


def _plan(env: dict[str, str], args: list[str], files: dict[str, Path], cache: Path, sglang_python: str):
    """plan_for with NIM_ENGINE=sglang, the sources' files given as facts: a first plan names the sources."""
    env = {"NIM_CACHE_PATH": str(cache), "NIM_ENGINE": "sglang", "SGLANG_PYTHON": sglang_python, **env}
    _, first = plan_for(env, args, Facts(registry=REGISTRY))
    named = [first.target.source] + ([first.draft.source] if first.draft else [])
    sources = {}
    for source in named:
        directory = files.get(source) or _by_name(source) or EAGLE3_DIR  # a draft SGLang reads the kind of only
        sources[source] = _source_facts(source, directory)
    return plan_for(env, args, Facts(registry=REGISTRY, sources=sources))[1]


def _cases() -> dict[str, tuple[dict[str, str], list[str], dict[str, Path]]]:
    cases = {f"guide {name}": case for name, case in GUIDE.items()}
    cases.update({name: case for name, case in NATIVE.items()})
    for path in sorted((ROOT / "configs" / "builtin_specdec").glob("*.json")):
        entry = json.loads(path.read_text())
        files = {entry["source"]: DATA / entry["test_config"]}
        cases[f"builtin {entry['model_id']}"] = (
            {"NIM_SPECDEC_ENABLE": "1", "NIM_MODEL_NAME": entry["model_id"]},
            [],
            files,
        )
    return cases


CASES = _cases()


@pytest.fixture(scope="module")
def planned(sglang_python, tmp_path_factory):
    """Every case planned, then resolved by SGLang in one child (launch.engine_check, as `plan` runs it)."""
    plans = [
        _plan(env, args, files, tmp_path_factory.mktemp("cache"), sglang_python) for env, args, files in CASES.values()
    ]
    return dict(zip(CASES, plans, strict=True)), dict(zip(CASES, with_sglang_resolution(plans, sglang_python)))


def test_every_builtin_is_planned():
    assert len([name for name in CASES if name.startswith("builtin")]) == len(REGISTRY) == 26


@pytest.mark.parametrize("name", sorted(CASES))
def test_planned_for_sglang_and_judged_by_its_resolver(planned, name, sglang_python):
    before, after = planned[0][name], planned[1][name]
    assert after.engine.name == "sglang" and after.vllm_check == NOT_FOR_SGLANG
    assert after.launch.argv[:3] == (sglang_python, "-m", "sglang.launch_server")
    assert after.speculative.enabled and "--speculative-algorithm" in after.launch.argv
    added = after.warnings[len(before.warnings) :]
    model_id = name.removeprefix("builtin ")
    if model_id in PLATFORM_ONLY:
        assert len(added) == 1 and added[0].startswith(NOT_JUDGED), added
        return
    # Accepted: what SGLang fills in unasked is listed (the batch cap at least); nothing the launcher wrote is changed
    # (the user's own override is: the test below).
    assert BATCH_CAP in "\n".join(added), added
    assert name in NATIVE or all(": asked unset," in line for line in added), added
    assert not any(str(DATA) in line for line in added)  # the paths the command gives, not the folders read


def test_a_value_sglang_changes_silently_is_a_warning_of_the_plan(planned):
    after = planned[1]["native-draft-tokens"]
    assert "--speculative-num-draft-tokens 9 given wins over 4 from the speculative config" in after.warnings
    assert "--speculative-num-draft-tokens: asked 9, SGLang 0.5 serves 4 (its _handle_eagle_family)" in after.warnings


@pytest.mark.parametrize(
    ("name", "algorithm", "method"),
    [
        ("guide builtin-eagle3", "EAGLE3", "eagle3"),
        ("guide override-ngram-on-mtp", "NGRAM", "ngram"),
        ("guide model-free-ngram", "NGRAM", "ngram"),
        ("guide model-free-mtp", "EAGLE", "mtp"),
        ("guide own-eagle3-draft", "EAGLE3", "eagle3"),
    ],
)
def test_the_guide_examples_become_sglang_flags(planned, name, algorithm, method):
    plan = planned[1][name]
    argv = plan.launch.argv
    assert argv[argv.index("--speculative-algorithm") + 1] == algorithm
    assert plan.speculative.method == method
    if name == "guide builtin-eagle3":  # SGLang serves one name: the built-in's NIM name, the repository id dropped
        assert argv[argv.index("--served-model-name") + 1] == "meta/llama-3.1-8b-instruct"
        assert f"SGLang serves one --served-model-name: 'meta/llama-3.1-8b-instruct' is served, {LLAMA!r} not" in (
            plan.warnings
        )
    if plan.draft is not None:  # materialized as for vLLM: the workspace path, given to SGLang
        assert argv[argv.index("--speculative-draft-model-path") + 1] == plan.draft.path
        assert plan.draft.path == f"{plan.workspace}/{plan.draft.name}"
