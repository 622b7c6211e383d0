"""Each misconfiguration gives one line naming the variable or argument, the value and the fix,
with its documented exit code; no input ever produces a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core_fixtures import facts
from nim_specdec.errors import EXIT_CONFIG, EXIT_MATERIALIZE, LauncherError
from nim_specdec.launch.resolve import plan_for

NGRAM = '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 1}'

# (id, env, args, exit code, fragments the message must contain)
CASES = [
    (
        "invalid-json",
        {"NIM_SPECDEC_ENABLE": "1", "NIM_SPECDEC_ARGS": '{"speculative_config": '},
        [],
        EXIT_CONFIG,
        ["NIM_SPECDEC_ARGS", "invalid JSON at line 1 column 24"],
    ),
    (
        "not-an-object",
        {"NIM_SPECDEC_ENABLE": "1", "NIM_SPECDEC_ARGS": "[1, 2]"},
        [],
        EXIT_CONFIG,
        ["NIM_SPECDEC_ARGS", "expected a JSON object, got list"],
    ),
    (
        "spec-string-invalid",
        {"NIM_SPECDEC_ENABLE": "1", "NIM_SPECDEC_ARGS": '{"speculative_config": "{method: ngram}"}'},
        [],
        EXIT_CONFIG,
        ["NIM_SPECDEC_ARGS (speculative_config string)", "invalid JSON"],
    ),
    (
        "spec-wrong-kind",
        {"NIM_SPECDEC_ENABLE": "1", "NIM_SPECDEC_ARGS": '{"speculative_config": 3}'},
        [],
        EXIT_CONFIG,
        ["must be a non-empty JSON object (or a JSON string holding one)"],
    ),
    (
        "unknown-key",
        {},
        ["--speculative-config", '{"method": "ngram", "num_speculative_token": 3}'],
        EXIT_CONFIG,
        [
            "--speculative-config",
            "unknown speculative_config key 'num_speculative_token'",
            "did you mean 'num_speculative_tokens'?",
        ],
    ),
    (
        "unknown-method",
        {},
        ["--speculative-config", '{"method": "eagle4", "num_speculative_tokens": 3}'],
        EXIT_CONFIG,
        ["speculative_config.method = 'eagle4' is not one of"],
    ),
    (
        "wrong-type",
        {"NIM_SPECDEC_ENABLE": "1", "NIM_SPECDEC_ARGS": '{"speculative_config": {"num_speculative_tokens": "three"}}'},
        [],
        EXIT_CONFIG,
        ["NIM_SPECDEC_ARGS", "num_speculative_tokens = 'three' is not an integer >= 1"],
    ),
    (
        "zero-tokens",
        {},
        ["--speculative-config", '{"method": "ngram", "num_speculative_tokens": 0}'],
        EXIT_CONFIG,
        ["num_speculative_tokens = 0 is not an integer >= 1"],
    ),
    (
        "negative-tokens",
        {},
        ["--speculative-config.num_speculative_tokens", "-2"],
        EXIT_CONFIG,
        ["num_speculative_tokens = -2 is not an integer >= 1"],
    ),
    (
        "min-over-max",
        {},
        [
            "--speculative-config",
            '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 5, "prompt_lookup_max": 2}',
        ],
        EXIT_CONFIG,
        ["prompt_lookup_min (5) is greater than prompt_lookup_max (2)", "make prompt_lookup_min <= prompt_lookup_max"],
    ),
    (
        "bad-boolean",
        {"NIM_SPECDEC_ENABLE": "maybe"},
        [],
        EXIT_CONFIG,
        ["NIM_SPECDEC_ENABLE: invalid value 'maybe'", "use 1 or 0 (also true/false, yes/no, on/off)"],
    ),
    (
        "relative-draft",
        {"NIM_DRAFT_MODEL_PATH": "models/draft"},
        [],
        EXIT_CONFIG,
        ["NIM_DRAFT_MODEL_PATH: relative path 'models/draft' is not allowed"],
    ),
    (
        "unknown-scheme",
        {"NIM_DRAFT_MODEL_PATH": "ftp://host/draft"},
        [],
        EXIT_CONFIG,
        ["NIM_DRAFT_MODEL_PATH: unsupported scheme 'ftp'"],
    ),
    (
        "needs-model",
        {},
        ["--speculative-config", '{"method": "eagle3", "num_speculative_tokens": 3}'],
        EXIT_CONFIG,
        ["method 'eagle3' needs a draft", "NIM_DRAFT_MODEL_PATH"],
    ),
    (
        "bare-name-no-source",
        {},
        ["--speculative-config", '{"method": "eagle3", "model": "eagle3_draft"}'],
        EXIT_CONFIG,
        ["bare draft name 'eagle3_draft' has no draft source", "set NIM_DRAFT_MODEL_PATH"],
    ),
    (
        "bare-name-separator",
        {"NIM_DRAFT_MODEL_PATH": "s3://b/d"},
        ["--speculative-config", '{"method": "eagle3", "model": "drafts/eagle3"}'],
        EXIT_CONFIG,
        ["'drafts/eagle3' is neither a bare name nor an absolute path"],
    ),
    (
        "bare-name-dotdot",
        {"NIM_DRAFT_MODEL_PATH": "s3://b/d"},
        ["--speculative-config", '{"method": "eagle3", "model": ".."}'],
        EXIT_CONFIG,
        ["'..' is neither a bare name nor an absolute path"],
    ),
    ("bad-port", {"NIM_SERVER_PORT": "80000"}, [], EXIT_CONFIG, ["NIM_SERVER_PORT: value 80000 is out of range"]),
    (
        "bad-max-len",
        {"NIM_MAX_MODEL_LEN": "4k"},
        [],
        EXIT_CONFIG,
        ["NIM_MAX_MODEL_LEN: invalid value '4k' is not an integer"],
    ),
    (
        "unknown-model-name",
        {"NIM_MODEL_PATH": "", "NIM_MODEL_NAME": "meta-llama/Llama-3.1-8B-Instrct"},
        [],
        EXIT_CONFIG,
        ["NIM_MODEL_NAME: unknown model", "did you mean 'meta-llama/Llama-3.1-8B-Instruct'?"],
    ),
    ("no-model", {"NIM_MODEL_PATH": ""}, [], EXIT_CONFIG, ["no model to serve", "set NIM_MODEL_PATH"]),
]


def _env(models, extra):
    base = {"NIM_CACHE_PATH": str(models["cache"]), "NIM_MODEL_PATH": str(models["target"])}
    base.update(extra)
    return {k: v for k, v in base.items() if v != ""}


@pytest.mark.parametrize("case_id,env,args,code,fragments", CASES, ids=[c[0] for c in CASES])
def test_config_errors(models, case_id, env, args, code, fragments):
    with pytest.raises(LauncherError) as info:
        plan_for(_env(models, env), args, facts())
    message = info.value.one_line()
    assert info.value.exit_code == code
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message


def test_local_path_problems_are_exit_3(models, tmp_path):
    a_file = tmp_path / "weights.bin"
    a_file.write_text("x")
    no_config = tmp_path / "empty-draft"
    no_config.mkdir()
    spec = ["--speculative-config", '{"method": "eagle3", "model": "d", "num_speculative_tokens": 3}']
    for path, fragment in (
        (tmp_path / "missing", "does not exist"),
        (a_file, "is a file, not a directory"),
        (no_config, "has no config.json"),
    ):
        with pytest.raises(LauncherError) as info:
            plan_for(_env(models, {"NIM_DRAFT_MODEL_PATH": str(path)}), spec, facts())
        assert info.value.exit_code == EXIT_MATERIALIZE
        assert info.value.where == "NIM_DRAFT_MODEL_PATH"
        assert fragment in info.value.problem


VARIABLES = [
    "NIM_SPECDEC_ENABLE",
    "NIM_SPECDEC_ARGS",
    "NIM_DRAFT_MODEL_PATH",
    "NIM_MODEL_PATH",
    "NIM_MODEL_NAME",
    "NIM_MAX_MODEL_LEN",
    "NIM_SERVER_PORT",
    "NIM_PASSTHROUGH_ARGS",
    "NIM_CACHE_PATH",
    "NIM_LOG_LEVEL",
    "NIM_JSONL_LOGGING",
    "NIM_SERVED_MODEL_NAME",
    "NIM_WORKSPACE",
]
json_like = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                ["speculative_config", "method", "model", "num_speculative_tokens", "prompt_lookup_min", "x-y"]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=8,
).map(json.dumps)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(VARIABLES), value=st.text(max_size=40) | json_like, enable=st.booleans())
def test_no_value_produces_a_traceback(models, name, value, enable):
    env = _env(models, {"NIM_SPECDEC_ENABLE": "1" if enable else "0"})
    env[name] = value
    try:
        plan_for(env, [], facts())
    except LauncherError as err:
        assert "\n" not in err.one_line()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    args=st.lists(
        st.sampled_from(
            [
                "--speculative-config",
                "--speculative-config.method",
                "--model",
                "--port",
                "{",
                "}",
                '{"method": "ngram"}',
                "ngram",
                "-1",
                "=",
                "--x=1",
                "",
            ]
        ),
        max_size=6,
    )
)
def test_no_argument_list_produces_a_traceback(models, args):
    try:
        plan_for(_env(models, {}), args, facts())
    except LauncherError as err:
        assert "\n" not in err.one_line()


def test_cli_prints_one_line_and_exit_code(models):
    env = {**os.environ, **_env(models, {"NIM_SPECDEC_ENABLE": "yes please"})}
    proc = subprocess.run(
        [sys.executable, "-m", "nim_specdec", "plan"], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == EXIT_CONFIG
    assert proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        "nim-specdec: error: NIM_SPECDEC_ENABLE: invalid value 'yes please'; use 1 or 0 (also true/false, yes/no, on/off)"  # noqa: E501
    ]
