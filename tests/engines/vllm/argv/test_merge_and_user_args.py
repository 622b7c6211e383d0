"""Precedence, method replacement and argument handling, table-driven over plain data."""

from __future__ import annotations

import json

import pytest

from core_fixtures import facts
from nim_specdec.config.settings import parse_bool, parse_settings
from nim_specdec.engines.vllm.argv.engine_command import to_cli
from nim_specdec.engines.vllm.argv.user_args import parse_vllm_args
from nim_specdec.errors import ConfigError
from nim_specdec.launch.resolve import plan_for
from nim_specdec.plan.merge import merge_spec
from nim_specdec.plan.plan_model import plan_json

MERGE_CASES = [
    (
        "same-method-merges",
        [
            ("builtin", {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}),
            ("NIM_SPECDEC_ARGS", {"method": "ngram", "num_speculative_tokens": 5}),
        ],
        {"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 4},
        {"method": "NIM_SPECDEC_ARGS", "num_speculative_tokens": "NIM_SPECDEC_ARGS", "prompt_lookup_max": "builtin"},
    ),
    (
        "no-method-merges",
        [("builtin", {"method": "mtp", "num_speculative_tokens": 1}), ("cli", {"num_speculative_tokens": 2})],
        {"method": "mtp", "num_speculative_tokens": 2},
        {"method": "builtin", "num_speculative_tokens": "cli"},
    ),
    (
        "other-method-replaces",
        [
            ("builtin", {"method": "eagle3", "model": "d", "num_speculative_tokens": 3}),
            ("cli", {"method": "ngram", "num_speculative_tokens": 2}),
        ],
        {"method": "ngram", "num_speculative_tokens": 2},
        {"method": "cli", "num_speculative_tokens": "cli"},
    ),
    (
        "empty-layers-skip",
        [("builtin", None), ("cli", {}), ("x", {"method": "ngram"})],
        {"method": "ngram"},
        {"method": "x"},
    ),
]


@pytest.mark.parametrize("case_id,layers,config,origin", MERGE_CASES, ids=[c[0] for c in MERGE_CASES])
def test_merge_spec(case_id, layers, config, origin):
    assert merge_spec(layers) == (config, origin)


ARGV_CASES = [
    (
        "space-form",
        ["--speculative-config", '{"method": "ngram"}', "--port", "9000"],
        {"method": "ngram"},
        {},
        None,
        ["port"],
    ),
    ("equals-form", ['--speculative-config={"method": "mtp"}'], {"method": "mtp"}, {}, None, []),
    (
        "dotted-form",
        ["--speculative-config.method", "ngram", "--speculative-config.num_speculative_tokens=4"],
        None,
        {"method": "ngram", "num_speculative_tokens": 4},
        None,
        [],
    ),
    ("positional-model", ["/models/t", "--dtype", "bfloat16"], None, {}, "/models/t", ["dtype"]),
    (
        "model-option",
        ["--model=/m", "--enforce-eager", "--no-enable-prefix-caching"],
        None,
        {},
        "/m",
        ["enforce_eager", "enable_prefix_caching"],
    ),
    ("negative-value", ["--seed", "-1"], None, {}, None, ["seed"]),
]


@pytest.mark.parametrize(
    "tokens,groups",
    [
        (["--enforce-eager", "-O0"], [("--enforce-eager",), ("-O0",)]),
        (["--trust-remote-code", "-O=3", "--seed", "1"], [("--trust-remote-code",), ("-O=3",), ("--seed", "1")]),
        (["--enforce-eager", "-cc.mode=0"], [("--enforce-eager",), ("-cc.mode=0",)]),
        (["--enforce-eager", "-Odecode"], [("--enforce-eager",), ("-Odecode",)]),
        (["--seed", "-1"], [("--seed", "-1")]),
        # After a key, a token vLLM does not know as an option stays the key's, whatever it looks like.
        (["--api-key", "-Oabc"], [("--api-key=-Oabc",)]),
    ],
)
def test_spellings_vllm_rewrites_are_options_not_the_previous_flags_value(tokens, groups):
    """vLLM's parser turns -O<level> and -short.key=value into options before argparse reads them: after a
    flag that takes no value they are options of their own (`--enforce-eager -O0` kept its -O0)."""
    assert [o.tokens for o in parse_vllm_args(tokens, "argument").options] == groups


@pytest.mark.parametrize("case_id,tokens,spec,dotted,model,names", ARGV_CASES, ids=[c[0] for c in ARGV_CASES])
def test_parse_vllm_args(case_id, tokens, spec, dotted, model, names):
    parsed = parse_vllm_args(tokens, "argument")
    assert parsed.spec == (spec if spec is not None else dotted or None)
    assert parsed.spec_given == (spec is not None or bool(dotted))
    assert parsed.model == model
    assert [o.name for o in parsed.options] == names


@pytest.mark.parametrize(
    "name,value,expected",
    [
        ("gpu_memory_utilization", 0.85, ["--gpu-memory-utilization", "0.85"]),
        ("enforce_eager", True, ["--enforce-eager"]),
        ("enable_prefix_caching", False, ["--no-enable-prefix-caching"]),
        ("limit_mm_per_prompt", {"image": 2}, ["--limit-mm-per-prompt", '{"image":2}']),
        ("max-num-seqs", 8, ["--max-num-seqs", "8"]),
        ("seed", None, []),
    ],
)
def test_to_cli(name, value, expected):
    assert to_cli(name, value) == expected


@pytest.mark.parametrize(
    "raw,value",
    [
        ("1", True),
        ("TRUE", True),
        ("Yes", True),
        ("on", True),
        ("0", False),
        ("false", False),
        ("NO", False),
        ("Off", False),
        ("", False),
    ],
)
def test_booleans(raw, value):
    assert parse_bool({"X": raw}, "X") is value


def test_settings_defaults():
    s = parse_settings({})
    assert (s.speculation.enable, s.engine_variables.port, s.locations.cache_path, s.locations.workspace) == (
        False,
        8000,
        "/opt/nim/.cache",
        "/opt/nim/.cache/workspace",
    )


def _plan(models, env, args):
    env = {"NIM_CACHE_PATH": str(models["cache"]), "NIM_MODEL_PATH": str(models["target"]), **env}
    return plan_json(plan_for(env, args, facts())[1])


def test_precedence_of_engine_arguments(models):
    """cli > NIM_PASSTHROUGH_ARGS > NIM_SPECDEC_ARGS > other NIM_* > defaults; user tokens kept in order."""
    p = _plan(
        models,
        {
            "NIM_SPECDEC_ENABLE": "1",
            "NIM_MAX_MODEL_LEN": "2048",
            "NIM_SERVER_PORT": "8001",
            "NIM_SPECDEC_ARGS": '{"max_model_len": 4096, "max_num_seqs": 4, "gpu_memory_utilization": 0.7}',
            "NIM_PASSTHROUGH_ARGS": "--max-num-seqs 8 --gpu-memory-utilization 0.8",
        },
        ["--gpu-memory-utilization=0.9", "--enforce-eager"],
    )
    argv = p["argv"]
    assert p["engine_args"]["max_model_len"] == 4096 and p["engine_origin"]["max_model_len"] == "NIM_SPECDEC_ARGS"
    assert p["engine_args"]["max_num_seqs"] == 8 and p["engine_origin"]["max_num_seqs"] == "NIM_PASSTHROUGH_ARGS"
    assert p["engine_args"]["gpu_memory_utilization"] == 0.9 and p["engine_origin"]["gpu_memory_utilization"] == "cli"
    assert p["engine_args"]["port"] == 8001
    assert argv.count("--max-num-seqs") == 1 and "--gpu-memory-utilization" not in argv
    i = argv.index("--gpu-memory-utilization=0.9")
    assert argv[i + 1] == "--enforce-eager"


def test_precedence_of_speculative_keys(models):
    p = _plan(
        models,
        {
            "NIM_SPECDEC_ENABLE": "1",
            "NIM_SPECDEC_ARGS": '{"speculative_config": {"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_max": 3}}',  # noqa: E501
            "NIM_PASSTHROUGH_ARGS": "--speculative-config.prompt_lookup_max 5",
        },
        ["--speculative-config.num_speculative_tokens", "4"],
    )
    assert p["speculative"]["config"] == {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 5}
    assert p["speculative"]["origin"] == {
        "method": "NIM_SPECDEC_ARGS",
        "num_speculative_tokens": "cli",
        "prompt_lookup_max": "NIM_PASSTHROUGH_ARGS",
    }


@pytest.mark.parametrize(
    "target,draft,method,reason",
    [
        ("mtp", None, "mtp", "num_nextn_predict_layers=1"),
        ("target", "draft", "eagle3", "NIM_DRAFT_MODEL_PATH names a draft"),
        ("target", None, "ngram", "no MTP heads and no registered EAGLE3 draft"),
    ],
)
def test_model_free_auto_choice(models, target, draft, method, reason):
    env = {"NIM_SPECDEC_ENABLE": "1", "NIM_MODEL_PATH": str(models[target])}
    if draft:
        env["NIM_DRAFT_MODEL_PATH"] = str(models[draft])
    p = _plan(models, env, [])
    assert p["speculative"]["method"] == method
    assert reason in p["speculative"]["reason"]
    assert p["speculative"]["reason"].startswith("auto-chosen for model-free mode")


def test_model_free_auto_choice_uses_a_registered_eagle3_draft(models):
    p = _plan(models, {"NIM_SPECDEC_ENABLE": "1", "NIM_MODEL_PATH": "hf://meta-llama/Llama-3.1-8B-Instruct"}, [])
    assert p["speculative"]["method"] == "eagle3"
    assert p["draft"]["source"] == "hf://yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"


def test_secrets_are_masked_everywhere(models):
    p = _plan(
        models,
        {"HF_TOKEN": "hf_abcdefgh", "AWS_SECRET_ACCESS_KEY": "aws-secret-1", "MY_PASSWORD": "pw123456"},
        ["--api-key", "sk-12345678", "--hf-token=hf_abcdefgh"],
    )
    text = json.dumps(p["env"]) + json.dumps(p["argv"]) + json.dumps(p["engine_args"])
    for secret in ("hf_abcdefgh", "aws-secret-1", "sk-12345678"):
        assert secret not in text
    assert p["argv"][p["argv"].index("--api-key") + 1] == "***"


def test_draft_ignored_when_off_is_warned(models):
    p = _plan(models, {"NIM_DRAFT_MODEL_PATH": str(models["draft"])}, [])
    assert p["draft"] is None
    assert any("NIM_DRAFT_MODEL_PATH is ignored" in w for w in p["warnings"])


# (id, environment, vLLM arguments, the --shutdown-timeout vLLM gets, where it came from)
SHUTDOWN_CASES = [
    ("default", {}, [], 60, "default"),
    ("variable", {"NIM_SHUTDOWN_TIMEOUT": "90"}, [], 90, "NIM_SHUTDOWN_TIMEOUT"),
    ("variable-zero-aborts", {"NIM_SHUTDOWN_TIMEOUT": "0"}, [], 0, "NIM_SHUTDOWN_TIMEOUT"),
    (
        "specdec-args-win",
        {"NIM_SHUTDOWN_TIMEOUT": "90", "NIM_SPECDEC_ENABLE": "1", "NIM_SPECDEC_ARGS": '{"shutdown_timeout": 30}'},
        [],
        30,
        "NIM_SPECDEC_ARGS",
    ),
    (
        "passthrough-wins",
        {"NIM_SHUTDOWN_TIMEOUT": "90", "NIM_PASSTHROUGH_ARGS": "--shutdown-timeout 20"},
        [],
        20,
        "NIM_PASSTHROUGH_ARGS",
    ),
    (
        "cli-wins",
        {"NIM_SHUTDOWN_TIMEOUT": "90", "NIM_PASSTHROUGH_ARGS": "--shutdown-timeout 20"},
        ["--shutdown-timeout=5"],
        5,
        "cli",
    ),
]


@pytest.mark.parametrize("case_id,env,args,value,origin", SHUTDOWN_CASES, ids=[c[0] for c in SHUTDOWN_CASES])
def test_shutdown_timeout_precedence(models, case_id, env, args, value, origin):
    p = _plan(models, env, args)
    assert int(p["engine_args"]["shutdown_timeout"]) == value and p["engine_origin"]["shutdown_timeout"] == origin
    argv = p["argv"]
    given = [t for t in argv if t.startswith("--shutdown-timeout")]
    assert len(given) == 1, argv  # vLLM gets the option once, from the layer that wins
    assert (given[0].split("=")[1] if "=" in given[0] else argv[argv.index(given[0]) + 1]) == str(value)


@pytest.mark.parametrize("raw", ["-1", "abc", "86401", "1.5"])
def test_shutdown_timeout_refuses_bad_values(raw):
    with pytest.raises(ConfigError) as err:
        parse_settings({"NIM_SHUTDOWN_TIMEOUT": raw})
    assert "NIM_SHUTDOWN_TIMEOUT" in str(err.value) and "0 to 86400" in str(err.value)
