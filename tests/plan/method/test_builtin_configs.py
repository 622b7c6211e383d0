"""Every shipped built-in entry obeys the guide's order (MTP, else a published EAGLE3 draft, else
n-gram) given the model's real config.json, stored under tests/data/model_configs/."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from core_fixtures import validate_spec_config
from nim_specdec.config.sources import parse_source
from nim_specdec.engines.vllm.release.methods import names_where
from nim_specdec.engines.vllm.release.vllm_schema import knowledge_for, known_versions
from nim_specdec.engines.vllm.spec.spec_schema import MTP_METHODS
from nim_specdec.errors import ConfigError
from nim_specdec.launch.resolve import plan_for
from nim_specdec.plan.method.builtin import default_config_dir, find, load_registry
from nim_specdec.plan.method.method_choice import draft_method, mtp_drafter, mtp_heads
from nim_specdec.plan.plan_facts import Facts
from nim_specdec.plan.plan_model import plan_json

DATA = Path(__file__).parents[2] / "data" / "model_configs"
REGISTRY = load_registry(default_config_dir())
ENTRIES = {entry.file: entry for entry in REGISTRY}
PARALLEL_DRAFTERS = names_where("parallel")  # every position of a block drafted in one pass
RAW = {path.name: json.loads(path.read_text()) for path in sorted(default_config_dir().glob("*.json"))}


def _expected_family(target_config: dict, has_draft: bool, method: str, evidence: str | None) -> str:
    if has_draft and method in PARALLEL_DRAFTERS and evidence:  # ahead of the guide's order, on published evidence
        return method
    # MTP where the target declares heads and every known release has a drafter for it (the entries plan on each)
    if mtp_heads(target_config) and all(mtp_drafter(target_config, knowledge_for(v)) for v in known_versions()):
        return "mtp"
    return "eagle3" if has_draft else "ngram"


def _family(method: str) -> str:
    return "mtp" if method in MTP_METHODS else method


def test_the_registry_ships_every_method():
    families = [_family(entry.method) for entry in REGISTRY]
    assert families.count("eagle3") >= 2
    assert families.count("mtp") >= 2
    assert families.count("ngram") >= 2


@pytest.mark.parametrize("file", sorted(ENTRIES))
def test_entry_obeys_the_method_order(file):
    entry = ENTRIES[file]
    target_config = json.loads((DATA / RAW[file]["test_config"] / "config.json").read_text())
    assert _family(entry.method) == _expected_family(
        target_config, entry.draft_source is not None, entry.method, entry.evidence
    )


@pytest.mark.parametrize("file", sorted(f for f, e in ENTRIES.items() if e.method in PARALLEL_DRAFTERS))
def test_a_parallel_drafter_entry_states_its_evidence(file):
    """DFlash or DSpark ahead of the guide's order only with the published figures and where they are published."""
    entry = ENTRIES[file]
    assert entry.draft_source and entry.evidence
    assert "@" in entry.evidence and re.search(r"\d+\.\d+ vs \d+\.\d+", entry.evidence)


def test_the_catalogue_has_a_parallel_drafter():
    assert any(entry.method in PARALLEL_DRAFTERS for entry in REGISTRY)


@pytest.mark.parametrize("file", sorted(ENTRIES))
def test_entry_is_valid(file):
    entry = ENTRIES[file]
    validate_spec_config(entry.speculative_config, file)
    parse_source(entry.source, file)
    if entry.draft_source:
        parse_source(entry.draft_source, file)
        assert entry.draft_published_at and entry.draft_published_at.startswith("https://")
        assert "/" not in entry.speculative_config["model"]  # a bare name, materialized from the draft source
    else:
        assert "model" not in entry.speculative_config


def test_names_are_unique():
    """No two entries share a name (compared case-insensitively, as NIM_MODEL_NAME selects); within one entry a
    NIM name may be its repository id in lower case: vLLM compares served names exactly, so it is served too."""
    names = [name for entry in REGISTRY for name in {n.lower() for n in entry.names()}]
    assert len(names) == len(set(names))
    for entry in REGISTRY:
        assert find(REGISTRY, [entry.model_id.upper()]) is entry
        assert not {alias.lower() for alias in entry.aliases} & {entry.model_id.lower()}


# The name NIM for LLMs serves each built-in under (build.nvidia.com's publisher/model, NIM's model name), or
# None where no NIM for LLMs of that model is published: a client written for that NIM asks for this name.
NIM_NAMES = {
    "llama-3.1-8b-instruct.json": "meta/llama-3.1-8b-instruct",
    "llama-3.3-70b-instruct.json": "meta/llama-3.3-70b-instruct",
    "mistral-7b-instruct-v0.3.json": "mistralai/mistral-7b-instruct-v0.3",
    "qwen2.5-7b-instruct.json": "qwen/qwen2.5-7b-instruct",
    "kimi-k2-instruct.json": "moonshotai/kimi-k2-instruct",
    "deepseek-v3.json": "deepseek-ai/deepseek-v3",
    "glm-5.json": "zai-org/glm-5",
    "qwen3.5-27b.json": None,
    "gpt-oss-120b.json": "openai/gpt-oss-120b",
    "gpt-oss-20b.json": "openai/gpt-oss-20b",
    "llama-4-maverick-17b-128e-instruct.json": None,
    "qwen3-235b-a22b.json": "qwen/qwen3-235b-a22b",
    "qwen3-30b-a3b.json": None,
    "qwen3-next-80b-a3b-thinking.json": None,
    "deepseek-v3.2.json": "deepseek-ai/deepseek-v3.2",
    "deepseek-v4-flash.json": None,
    "deepseek-v4-pro.json": None,
    "kimi-k2.6.json": "moonshotai/kimi-k2.6",
    "glm-5.1.json": None,
    "glm-5.2.json": "zai-org/glm-5.2",
    "nemotron-3-super-120b-a12b.json": "nvidia/nemotron-3-super-120b-a12b",
    "nemotron-3-ultra-550b-a55b.json": None,
    "nemotron-3-nano-30b-a3b.json": None,
    "nemotron-3.5-lightning-30b-a3b.json": None,
    "minimax-m3.json": None,
    "gemma-4-26b-a4b.json": None,
}


def test_every_entry_says_its_nim_name():
    assert {file: entry.nim_name for file, entry in ENTRIES.items()} == NIM_NAMES


@pytest.mark.parametrize("file", sorted(ENTRIES))
def test_a_builtin_is_served_under_its_nim_name_first(file):
    """--served-model-name: the NIM name (exactly as NIM spells it), then the repository id; selecting the
    entry by its NIM name in any case finds it."""
    entry = ENTRIES[file]
    expected = [NIM_NAMES[file], entry.model_id] if NIM_NAMES[file] else [entry.model_id]
    assert entry.served_names() == expected
    if entry.nim_name:
        assert find(REGISTRY, [entry.nim_name.upper()]) is entry


DOCS = [Path(__file__).parents[3] / "README.md", default_config_dir() / "README.md"] + sorted(
    (Path(__file__).parents[3] / "docs").glob("*.md")
)
NIM_NAME_IN_TEXT = re.compile(r"`([a-z0-9][a-z0-9-]*/[a-z0-9][a-z0-9.-]*)`")


def _nim_names_in_docs() -> dict[str, set[str]]:
    """name -> documents: every value given to NIM_MODEL_NAME, and every `publisher/model` in backquotes that is
    written the way NIM writes names (lower case) and has a NIM publisher's prefix."""
    publishers = {name.split("/")[0] for name in NIM_NAMES.values() if name}
    found: dict[str, set[str]] = {}
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        names = set(re.findall(r"NIM_MODEL_NAME=([A-Za-z0-9][A-Za-z0-9./_-]*)", text))
        names |= {n for n in NIM_NAME_IN_TEXT.findall(text) if n.split("/")[0] in publishers and not n.endswith(".md")}
        for name in names:
            found.setdefault(name, set()).add(doc.name)
    return found


def test_docs_name_nim_models():
    """The check below has something to check: the README's example and the served-names table."""
    found = _nim_names_in_docs()
    assert "meta/llama-3.1-8b-instruct" in found and "openai/gpt-oss-120b" in found


@pytest.mark.parametrize("name", sorted(_nim_names_in_docs()))
def test_every_nim_named_model_in_the_docs_resolves_to_its_entry(name):
    """A name the docs give a client selects a built-in, and a NIM name selects the entry that carries it."""
    entry = find(REGISTRY, [name])
    assert entry is not None, f"{name} (in {sorted(_nim_names_in_docs()[name])}) selects no built-in"
    if name in NIM_NAMES.values():
        assert entry.nim_name == name


def test_no_two_entries_share_a_nim_name():
    nim_names = [entry.nim_name.lower() for entry in REGISTRY if entry.nim_name]
    assert len(nim_names) == len(set(nim_names))


@pytest.mark.parametrize(
    "directory,heads",
    [
        ("deepseek-ai--DeepSeek-V3", ("num_nextn_predict_layers", 1)),
        ("zai-org--GLM-5", ("num_nextn_predict_layers", 1)),
        ("Qwen--Qwen3.5-27B", ("text_config.mtp_num_hidden_layers", 1)),
        ("Qwen--Qwen3-Next-80B-A3B-Thinking", ("model_type=qwen3_next", 1)),  # no key: vLLM maps the type
        ("deepseek-ai--DeepSeek-V3.2", ("num_nextn_predict_layers", 1)),
        ("deepseek-ai--DeepSeek-V4-Flash", ("num_nextn_predict_layers", 1)),
        ("zai-org--GLM-5.2", ("num_nextn_predict_layers", 1)),
        ("nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-FP8", ("num_nextn_predict_layers", 1)),
        ("nvidia--NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4", ("num_nextn_predict_layers", 1)),
        ("nvidia--MiniMax-M3-NVFP4", ("text_config.num_mtp_modules", 1)),  # the VL wrapper: heads on its text model
        ("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", None),  # nemotron_h without the key: no heads
        ("nvidia--Kimi-K2.6-NVFP4", None),
        ("openai--gpt-oss-120b", None),
        ("meta-llama--Llama-4-Maverick-17B-128E-Instruct", None),
        ("Qwen--Qwen3-235B-A22B", None),
        ("google--gemma-4-26B-A4B", None),  # Gemma 4's MTP drafts are separate assistant checkpoints
        ("moonshotai--Kimi-K2-Instruct", None),  # num_nextn_predict_layers: 0 is an explicit "none"
        ("meta-llama--Llama-3.1-8B-Instruct", None),
        ("Qwen--Qwen2.5-7B-Instruct", None),
    ],
)
def test_mtp_detection_on_real_configs(directory, heads):
    assert mtp_heads(json.loads((DATA / directory / "config.json").read_text())) == heads


@pytest.mark.parametrize(
    "directory,method",
    [
        ("yuhuili--EAGLE3-LLaMA3.1-Instruct-8B", "eagle3"),  # architectures says LlamaForCausalLM
        ("AQ-MedAI--Kimi-K2-Instruct-eagle3", "eagle3"),
        ("nm-testing--EAGLE3-LLaMA3.1-Instruct-8B-converted", "eagle3"),
        ("meta-llama--Llama-3.1-8B-Instruct", "draft_model"),
    ],
)
def test_draft_method_on_real_configs(directory, method):
    assert draft_method(json.loads((DATA / directory / "config.json").read_text())) == method


@pytest.mark.parametrize(
    "document",
    [
        '{"model_id": 7, "source": "hf://a/b", "speculative_config": {}}',
        '{"model_id": "a/b", "source": "hf://a/b", "speculative_config": []}',
        '{"model_id": "a/b", "source": "hf://a/b", "speculative_config": {}, "aliases": [1]}',
        '{"model_id": "a/b", "source": "hf://a/b", "speculative_config": {}, "draft": "x"}',
        '{"model_id": "a/b", "source": "hf://a/b", "speculative_config": {}, "draft": {"source": 3}}',
        '{"model_id": "a/b", "source": null, "speculative_config": {}}',
        '["not", "an", "object"]',
        "[" * 100000,
        '{"model_id": ' + "9" * 5000 + "}",
        '{"x": NaN}',
        "\xff",
    ],
)
def test_a_built_in_config_of_the_wrong_shape_is_one_configuration_error(tmp_path, document):
    (tmp_path / "bad.json").write_bytes(document.encode("utf-8", "surrogateescape") if document != "\xff" else b"\xff")
    with pytest.raises(ConfigError) as err:
        load_registry(tmp_path)
    assert "built-in config bad.json" in err.value.one_line() and err.value.exit_code == 2


@pytest.mark.parametrize("file", sorted(f for f, name in NIM_NAMES.items() if name))
def test_the_plan_serves_each_builtin_under_its_nim_name(file, tmp_path):
    """Selected by its NIM name, the plan hands vLLM both names, NIM's first (what /v1/models then lists)."""
    env = {"NIM_CACHE_PATH": str(tmp_path), "NIM_SPECDEC_ENABLE": "1", "NIM_MODEL_NAME": NIM_NAMES[file]}
    shipped = Facts(registry=REGISTRY, flavor="vllm", python="python3")  # the shipped files, not a test registry
    plan = plan_json(plan_for(env, [], shipped)[1])
    argv = plan["argv"]
    at = argv.index("--served-model-name")
    assert argv[at + 1 : at + 3] == [NIM_NAMES[file], ENTRIES[file].model_id]
    assert plan["target"]["served_model_names"] == [NIM_NAMES[file], ENTRIES[file].model_id]


@pytest.mark.parametrize("file", sorted(ENTRIES))
def test_entry_notes_say_what_vllm_034_changes_for_it(file):
    notes = RAW[file]["notes"]
    assert isinstance(notes, str) and notes.startswith("vLLM 0.34.0: checked against its schema")
    if ENTRIES[file].method == "ngram":  # the one family where 0.34 offers another method without a draft
        assert "suffix" in notes and "async scheduling on" in notes
