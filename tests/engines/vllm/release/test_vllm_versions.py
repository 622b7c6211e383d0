"""What the launcher knows of vLLM, keyed by the release it runs with: both shipped snapshots, what 0.33
changed, and a release without a snapshot (one warning, vLLM's own check alone)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from contract.test_guide_plans import CASES as GUIDE_CASES
from contract.test_guide_plans import ROOT
from core_fixtures import facts, make_models, validate_spec_config
from nim_specdec.engines.vllm.release.vllm_schema import is_negative, knowledge_for, known_versions
from nim_specdec.engines.vllm.spec import spec_schema
from nim_specdec.errors import ConfigError
from nim_specdec.launch.resolve import plan_for
from nim_specdec.plan.method.builtin import default_config_dir, load_registry
from nim_specdec.plan.plan_facts import SourceFacts
from nim_specdec.plan.plan_model import plan_json

NEW_IN_033 = {
    "disable_lookahead_block_hashes",
    "draft_lm_head_quantization",
    "xpress_topc",
    "fly_window_size",
    "fly_entropy_threshold",
    "fly_entropy_top_k",
}
NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3}


def test_every_release_ships_a_snapshot_of_its_own():
    assert known_versions() == ("0.32.0", "0.33.0", "0.34.0")
    for version in known_versions():
        known = knowledge_for(version)
        assert known.exact and known.data["vllm_version"] == version
        assert set(known.fields) <= set(spec_schema.KINDS), version
        enums = {key for key in known.fields if spec_schema.KINDS[key] == "enum"}
        assert enums <= set(known.data["enums"]), version


def test_033_drops_medusa_and_mlp_speculator_and_adds_its_keys():
    old, new = knowledge_for("0.32.0"), knowledge_for("0.33.0")
    assert {"medusa", "mlp_speculator"} <= set(old.methods)
    assert {"medusa", "mlp_speculator"}.isdisjoint(new.methods)
    assert NEW_IN_033 <= new.fields and NEW_IN_033.isdisjoint(old.fields)
    assert "fly" in new.enum("rejection_sample_method") and "fly" not in old.enum("rejection_sample_method")
    assert "step5_mtp" in new.mtp_methods and "step5_mtp" not in old.mtp_methods
    assert new.data["cli_args_module"] != old.data["cli_args_module"]


@pytest.mark.parametrize(
    "version, expected",
    [
        ("0.32.0", ("0.32.0", True)),
        ("0.33.0+cu129", ("0.33.0", True)),
        ("", ("0.32.0", True)),
        ("0.34.0", ("0.34.0", True)),
        ("0.35.1", ("0.34.0", False)),
        ("0.31.0", ("0.34.0", False)),
    ],
)
def test_a_release_is_looked_up_by_its_version(version, expected):
    known = knowledge_for(version)
    assert (known.snapshot, known.exact) == expected


def _plan(version: str, spec: dict, tmp_path: Path, *args: str, draft: dict | None = None):
    env = {"NIM_CACHE_PATH": str(tmp_path / "cache"), "NIM_MODEL_PATH": "hf://org/target"}
    known_facts = replace(facts(), vllm_version=version)
    if draft is not None:
        directory = tmp_path / "draft"
        directory.mkdir(exist_ok=True)
        (directory / "config.json").write_text(json.dumps(draft))
        spec = {**spec, "model": str(directory)}
        known_facts = replace(known_facts, sources={str(directory): SourceFacts(str(directory), draft)})
    return plan_for(env, ["--speculative-config", json.dumps(spec), *args], known_facts)[1]


LLAMA_DRAFT = {"architectures": ["LlamaForCausalLM"], "model_type": "llama"}
FLY = {**NGRAM, "rejection_sample_method": "fly"}

# (spec, draft config, {version: None if accepted, else a text the one-line error holds})
SUFFIX = {"method": "suffix", "num_speculative_tokens": 4}
EAGLE3_DRAFT = {"architectures": ["LlamaForCausalLMEagle3"]}
CASES = {
    "medusa": (
        {"method": "medusa", "num_speculative_tokens": 3},
        LLAMA_DRAFT,
        {
            "0.32.0": None,
            "0.33.0": "'medusa' is not in vLLM 0.33.0 (vLLM 0.32.0 has it)",
            "0.34.0": "'medusa' is not in vLLM 0.34.0 (vLLM 0.32.0 has it)",
        },
    ),
    "mlp_speculator": (
        {"method": "mlp_speculator", "num_speculative_tokens": 3},
        LLAMA_DRAFT,
        {"0.32.0": None, "0.33.0": "vLLM 0.33.0"},
    ),
    "fly": (
        {**FLY, "fly_window_size": 2},
        None,
        {"0.32.0": "'fly' is not in vLLM 0.32.0 (vLLM 0.33.0, 0.34.0 have it)", "0.33.0": None, "0.34.0": None},
    ),
    "fly window as large as k": (
        {**FLY, "fly_window_size": 3},
        None,
        {
            "0.33.0": "fly_window_size (3) must be smaller than num_speculative_tokens (3)",
            "0.34.0": "fly_window_size (3) must be smaller than num_speculative_tokens (3)",
        },
    ),
    "fly with one token": ({**FLY, "num_speculative_tokens": 1}, None, {"0.33.0": "needs num_speculative_tokens >= 2"}),
    "lm head quantized for ngram": (
        {**NGRAM, "draft_lm_head_quantization": "fp8"},
        None,
        {
            "0.32.0": "'draft_lm_head_quantization' is new in vLLM 0.33.0; vLLM 0.32.0 does not have it",
            "0.33.0": "not supported for method 'ngram'",
            "0.34.0": "not supported for method 'ngram'",
        },
    ),
    "lm head quantized for eagle3": (
        {"method": "eagle3", "num_speculative_tokens": 3, "draft_lm_head_quantization": "fp8"},
        EAGLE3_DRAFT,
        {"0.33.0": None, "0.34.0": None},
    ),
    "a platform's own kv_cache_dtype": (
        {**NGRAM, "kv_cache_dtype": "my_backend_fp6"},
        None,
        {"0.32.0": "speculative_config.kv_cache_dtype", "0.33.0": None, "0.34.0": None},
    ),
    "xpress_topc below 0": ({**NGRAM, "xpress_topc": -1}, None, {"0.33.0": "xpress_topc = -1 must be >= 0"}),
    "heterogeneous vocab with local argmax": (
        {
            "method": "draft_model",
            "num_speculative_tokens": 3,
            "use_heterogeneous_vocab": True,
            "use_local_argmax_reduction": True,
        },
        LLAMA_DRAFT,
        {
            "0.32.0": None,
            "0.33.0": "use_heterogeneous_vocab and use_local_argmax_reduction exclude each other",
            "0.34.0": "vLLM 0.34.0 has no speculative_config key 'use_heterogeneous_vocab' (removed in vLLM 0.34.0)",
        },
    ),
    # 0.34.0: removed keys and methods name the release and what replaced them; its new keys are refused before it
    "padded drafter batch off": (
        {**NGRAM, "disable_padded_drafter_batch": True},
        None,
        {
            "0.32.0": None,
            "0.33.0": None,
            "0.34.0": "vLLM 0.34.0 has no speculative_config key 'disable_padded_drafter_batch' (removed in vLLM "
            "0.34.0); replaced by nothing: Model Runner V2, its only runner, always pads",
        },
    ),
    "custom_class": (
        {"method": "custom_class", "model": "my_pkg.MyProposer", "num_speculative_tokens": 3},
        None,
        {
            "0.34.0": "vLLM 0.34.0 has no speculative method 'custom_class' (removed in vLLM 0.34.0); replaced by a "
            "method registered by a vLLM general plugin",
        },
    ),
    "custom_method given as a key": (
        {**NGRAM, "custom_method": "mine"},
        None,
        {
            "0.33.0": "unknown speculative_config key 'custom_method'",
            "0.34.0": "speculative_config.custom_method is set by vLLM 0.34.0 itself from method",
        },
    ),
    "suffix with a corpus size": (
        {**SUFFIX, "suffix_decoding_corpus_tokens": 4096},
        None,
        {
            "0.32.0": "'suffix_decoding_corpus_tokens' is new in vLLM 0.34.0; vLLM 0.32.0 does not have it",
            "0.33.0": "'suffix_decoding_corpus_tokens' is new in vLLM 0.34.0; vLLM 0.33.0 does not have it; remove "
            "it, or run vLLM 0.34.0",
            "0.34.0": None,
        },
    ),
    "suffix corpus past 2**31": (
        {**SUFFIX, "suffix_decoding_corpus_tokens": 2**31},
        None,
        {"0.34.0": "suffix_decoding_corpus_tokens = 2147483648 must be in [0, 2147483647]"},
    ),
    "draft decode context parallelism": (
        {"method": "eagle3", "num_speculative_tokens": 3, "draft_decode_context_parallel_size": 1},
        EAGLE3_DRAFT,
        {"0.33.0": "is new in vLLM 0.34.0", "0.34.0": None},
    ),
    "speculator options with a built-in method": (
        {**NGRAM, "speculator_options": {"a": 1}},
        None,
        {"0.33.0": "is new in vLLM 0.34.0", "0.34.0": "speculator_options is not supported with the built-in method"},
    ),
    "parallel drafting with eagle3": (
        {"method": "eagle3", "num_speculative_tokens": 3, "parallel_drafting": True},
        EAGLE3_DRAFT,
        {"0.34.0": "parallel_drafting is only supported by the dflash and dspark methods, not 'eagle3'"},
    ),
    "lm head quantized for dspark": (
        {"method": "dspark", "num_speculative_tokens": 3, "draft_lm_head_quantization": "fp8"},
        None,
        {"0.33.0": "not supported for method 'dspark'", "0.34.0": None},
    ),
}


@pytest.mark.parametrize("name, version", [(n, v) for n, (_, _, by) in CASES.items() for v in by])
def test_the_config_is_judged_by_the_release_it_will_run_on(name, version, tmp_path):
    spec, draft, outcomes = CASES[name]
    expected = outcomes[version]
    if expected is None:
        plan = _plan(version, spec, tmp_path, draft=draft)
        assert plan.speculative.config["method"] == spec["method"] and plan.warnings == ()
        return
    with pytest.raises(ConfigError) as err:
        _plan(version, spec, tmp_path, draft=draft)
    assert expected in err.value.one_line() and "\n" not in err.value.one_line()
    assert err.value.exit_code == 2


def test_a_release_without_a_snapshot_gets_one_warning_and_no_launcher_validation(tmp_path):
    # A method 0.33 dropped and a key no release has: refused by the launcher for every known release.
    spec = {"method": "medusa", "num_speculative_tokens": 3, "made_up_key": 1}
    for version in known_versions():
        with pytest.raises(ConfigError):
            _plan(version, spec, tmp_path, draft=LLAMA_DRAFT)
    # and a schedule and an engine number the known rules refuse
    spec = {**spec, "num_speculative_tokens_per_batch_size": [[2, 1, 3]]}
    plan = _plan("0.35.0", spec, tmp_path, "--max-num-seqs", "0", draft=LLAMA_DRAFT)
    assert plan.speculative.config["made_up_key"] == 1 and plan.speculative.batch_size_schedule is None
    assert plan.engine_args["max_num_seqs"] == 0
    for version in known_versions():
        with pytest.raises(ConfigError):
            _plan(version, NGRAM, tmp_path, "--max-num-seqs", "0")
        with pytest.raises(ConfigError):
            _plan(version, {**NGRAM, "num_speculative_tokens_per_batch_size": [[2, 1, 3]]}, tmp_path)
    (warning,) = plan.warnings
    assert "vLLM 0.35.0" in warning and "known: 0.32.0, 0.33.0, 0.34.0" in warning and "vLLM's own check" in warning


@pytest.mark.parametrize(
    "spec, version, warned",
    [
        ({**SUFFIX, "suffix_decoding_max_spec_factor": 2.0}, "0.34.0", "suffix_decoding_max_spec_factor"),
        ({**SUFFIX, "suffix_decoding_min_token_prob": 0.2}, "0.34.0", "suffix_decoding_min_token_prob"),
        ({**SUFFIX, "suffix_decoding_min_token_prob": 0.2}, "0.33.0", None),
        ({"method": "dflash", "num_speculative_tokens": 3, "parallel_drafting": True}, "0.34.0", "parallel_drafting"),
        ({"method": "dflash", "num_speculative_tokens": 3, "parallel_drafting": True}, "0.33.0", None),
    ],
)
def test_a_deprecated_key_warns_once_saying_what_it_does_now(spec, version, warned, tmp_path):
    draft = LLAMA_DRAFT if spec["method"] == "dflash" else None
    plan = _plan(version, spec, tmp_path, draft=draft)
    found = [w for w in plan.warnings if "deprecated" in w]
    if warned is None:
        assert found == []
        return
    (warning,) = found
    assert warning.startswith(f"speculative_config.{warned} is deprecated in vLLM 0.34.0 and does nothing: ")


def test_033_reads_disable_x_as_false(tmp_path):
    assert is_negative("--disable-prefix-caching", knowledge_for("0.33.0"))
    assert not is_negative("--enable-prefix-caching", knowledge_for("0.33.0"))
    assert is_negative("--no-enable-prefix-caching", knowledge_for("0.33.0"))  # still accepted, hidden
    assert is_negative("--no-enable-prefix-caching", knowledge_for("0.32.0"))
    plan = _plan("0.33.0", NGRAM, tmp_path, "--disable-prefix-caching")
    assert plan.engine_args["enable_prefix_caching"] is False


@pytest.mark.parametrize("name", sorted(GUIDE_CASES))
def test_every_guide_example_plans_alike_on_every_known_release(name, tmp_path):
    make_models(tmp_path)
    env_in, args = GUIDE_CASES[name]
    env = {"NIM_CACHE_PATH": f"{tmp_path}/cache", **{k: v.replace(ROOT, str(tmp_path)) for k, v in env_in.items()}}
    views = {}
    for version in known_versions():
        # a copy: conftest checks the plan
        view = dict(plan_json(plan_for(env, args, replace(facts(), vllm_version=version))[1]))
        assert view.pop("engine")["vllm_snapshot"] == version
        view.pop("compile_cache")  # its key names the vLLM release
        runner = view.pop("model_runner")  # it names the release it was decided for
        assert runner["vllm_version"] == version
        views[version] = view
    assert views["0.32.0"] == views["0.33.0"] == views["0.34.0"]


@pytest.mark.parametrize("version", known_versions())
def test_every_shipped_builtin_config_is_valid_on_every_known_release(version):
    registry = load_registry(default_config_dir())
    assert registry
    for entry in registry:
        validate_spec_config(entry.speculative_config, entry.file, knowledge_for(version))
