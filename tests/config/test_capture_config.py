"""parse_capture and capture_middleware_args: table-driven over environment mappings."""

from __future__ import annotations

import json

import pytest

from nim_specdec.capture.launcher import capture_middleware_args
from nim_specdec.config.capture_config import DEFAULT_ENDPOINT_PATTERN, CaptureConfig, parse_capture
from nim_specdec.errors import EXIT_CONFIG, ConfigError

DEFAULT_FILE = "/opt/nim/.cache/captures/payloads.jsonl"

ACCEPTED = [
    ({}, None),
    ({"NIM_CAPTURE_ENABLE": ""}, None),
    ({"NIM_CAPTURE_ENABLE": "0"}, None),
    ({"NIM_CAPTURE_ENABLE": "false", "NIM_CAPTURE_ARGS": "not even json"}, None),
    ({"NIM_CAPTURE_ENABLE": "Off"}, None),
    ({"NIM_CAPTURE_ENABLE": "1"}, CaptureConfig(DEFAULT_FILE)),
    ({"NIM_CAPTURE_ENABLE": " TRUE "}, CaptureConfig(DEFAULT_FILE)),
    ({"NIM_CAPTURE_ENABLE": "yes", "NIM_CAPTURE_ARGS": " "}, CaptureConfig(DEFAULT_FILE)),
    ({"NIM_CAPTURE_ENABLE": "on", "NIM_CAPTURE_ARGS": "{}"}, CaptureConfig(DEFAULT_FILE)),
    (
        {"NIM_CAPTURE_ENABLE": "1", "NIM_CACHE_PATH": "/data/cache/"},
        CaptureConfig("/data/cache/captures/payloads.jsonl"),
    ),
    (
        {
            "NIM_CAPTURE_ENABLE": "1",
            "NIM_CAPTURE_ARGS": '{"path": "/captures/t.jsonl", "format": "mooncake_payload", '
            '"endpoint_pattern": "^/v1/chat/completions$"}',
        },
        CaptureConfig("/captures/t.jsonl", "mooncake_payload", DEFAULT_ENDPOINT_PATTERN),
    ),
    (
        {
            "NIM_CAPTURE_ENABLE": "1",
            "NIM_CAPTURE_ARGS": '{"format": "raw_payload", "endpoint_pattern": "^/v1/completions$"}',
        },
        CaptureConfig(DEFAULT_FILE, "raw_payload", "^/v1/completions$"),
    ),
]


@pytest.mark.parametrize("env,expected", ACCEPTED)
def test_accepted(env, expected):
    assert parse_capture(env) == expected


REFUSED = [
    ({"NIM_CAPTURE_ENABLE": "2"}, "NIM_CAPTURE_ENABLE"),
    ({"NIM_CAPTURE_ENABLE": "enabled"}, "NIM_CAPTURE_ENABLE"),
    ({"NIM_CAPTURE_ENABLE": "1", "NIM_CAPTURE_ARGS": "{path: x}"}, "not valid JSON"),
    ({"NIM_CAPTURE_ENABLE": "1", "NIM_CAPTURE_ARGS": '["raw_payload"]'}, "must be a JSON object"),
    ({"NIM_CAPTURE_ENABLE": "1", "NIM_CAPTURE_ARGS": '{"formt": "raw_payload"}'}, "unknown key(s) 'formt'"),
    ({"NIM_CAPTURE_ENABLE": "1", "NIM_CAPTURE_ARGS": '{"format": "sharegpt"}'}, "unknown format 'sharegpt'"),
    ({"NIM_CAPTURE_ENABLE": "1", "NIM_CAPTURE_ARGS": '{"format": 1}'}, "NIM_CAPTURE_ARGS.format"),
    ({"NIM_CAPTURE_ENABLE": "1", "NIM_CAPTURE_ARGS": '{"endpoint_pattern": "^/v1/(chat"}'}, "not a valid regular"),
    ({"NIM_CAPTURE_ENABLE": "1", "NIM_CAPTURE_ARGS": '{"endpoint_pattern": ""}'}, "non-empty string"),
    ({"NIM_CAPTURE_ENABLE": "1", "NIM_CAPTURE_ARGS": '{"path": ""}'}, "NIM_CAPTURE_ARGS.path"),
    ({"NIM_CAPTURE_ENABLE": "1", "NIM_CAPTURE_ARGS": '{"path": null}'}, "NIM_CAPTURE_ARGS.path"),
    ({"NIM_CAPTURE_ENABLE": "1", "NIM_CAPTURE_ARGS": '{"path": "captures/c.jsonl"}'}, "relative path"),
]


@pytest.mark.parametrize("env,fragment", REFUSED)
def test_refused_with_one_line_config_error(env, fragment):
    with pytest.raises(ConfigError) as info:
        parse_capture(env)
    assert info.value.exit_code == EXIT_CONFIG
    assert fragment in info.value.one_line()
    assert "\n" not in info.value.one_line()


def test_middleware_args():
    assert capture_middleware_args(None) == []
    assert capture_middleware_args(CaptureConfig("/x.jsonl")) == [
        "--middleware",
        "nim_specdec.capture.middleware.CaptureMiddleware",
    ]


def test_middleware_named_in_the_args_is_importable():
    import importlib

    module, _, attr = capture_middleware_args(CaptureConfig("/x.jsonl"))[1].rpartition(".")
    assert callable(getattr(importlib.import_module(module), attr))


@pytest.mark.parametrize(
    "pattern,fragment",
    [
        ("(a)\\1", "invalid escape"),  # a back-reference: RE2 has none
        ("^/v1(?=/chat)", "invalid perl operator"),  # look-ahead
        ("a{1001}", "invalid repetition size"),
        ("(a{1000}){1000}", "invalid repetition size"),  # a million states: RE2 refuses it
        ("(" * 5000, "longer than 4096"),
        ("x\ud800", "not valid text"),
    ],
)
def test_a_pattern_re2_cannot_compile_is_one_exit_2_line_at_plan_time(pattern, fragment):
    env = {"NIM_CAPTURE_ENABLE": "1", "NIM_CAPTURE_ARGS": json.dumps({"endpoint_pattern": pattern})}
    with pytest.raises(ConfigError) as err:
        parse_capture(env)
    line = err.value.one_line()
    assert "NIM_CAPTURE_ARGS.endpoint_pattern" in line and fragment in line and err.value.exit_code == 2, line


def test_a_catastrophic_pattern_for_backtracking_is_matched_in_linear_time():
    from nim_specdec.text.linear_regex import MAX_PATH_CHARS, compile_linear, search_bounded

    pattern = compile_linear("^(a+)+$")
    assert search_bounded(pattern, "a" * 100)
    # Python's re takes exponential time on this path (2**40 steps); RE2 answers at once.
    assert not search_bounded(pattern, "a" * 40 + "b")
    assert not search_bounded(compile_linear("a"), "a" * (MAX_PATH_CHARS + 1))  # over the bound: never matched
    assert not search_bounded(compile_linear("a"), "a\udcff")
    # A count too large for a number is no repetition to RE2: a literal, compiled without an error.
    assert search_bounded(compile_linear("a{99999999999999999999}"), "/a{99999999999999999999}")


@pytest.mark.parametrize(
    "path",
    [
        "/etc/payloads.jsonl",
        "/tmp/payloads.jsonl",
        "/usr/lib/x.jsonl",
        "/proc/self/x.jsonl",
        "/var/../etc/x.jsonl",
        "/x.jsonl",
    ],
)
def test_a_capture_file_in_a_system_folder_is_refused_at_plan_time_as_the_cache_is(tmp_path, path):
    import subprocess
    import sys
    from pathlib import Path

    from nim_specdec.capture.middleware import writer_from_config
    from nim_specdec.files.trust import system_dir_problem

    src = Path(__file__).resolve().parents[2] / "src"
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text('{"architectures": ["LlamaForCausalLM"], "model_type": "llama"}')
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(src),
        "NIM_MODEL_PATH": str(tmp_path / "m"),
        "NIM_CACHE_PATH": str(tmp_path / "cache"),
        "NIM_CAPTURE_ENABLE": "1",
        "NIM_CAPTURE_ARGS": json.dumps({"path": path}),
    }
    done = subprocess.run(
        [sys.executable, "-m", "nim_specdec", "plan"], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 3 and "NIM_CAPTURE_ARGS.path" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert system_dir_problem(path.rsplit("/", 1)[0] or "/")
    assert writer_from_config(parse_capture(env)) is None  # a server started another way stays out of it too
