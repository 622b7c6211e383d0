"""parse_capture and capture_middleware_args: table-driven over environment mappings."""

from __future__ import annotations

import pytest

from nim_specdec.config.capture_config import (
    DEFAULT_ENDPOINT_PATTERN,
    CaptureConfig,
    capture_middleware_args,
    parse_capture,
)
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
    ({"NIM_CAPTURE_ENABLE": "1", "NIM_CACHE_PATH": "/data/cache/"},
     CaptureConfig("/data/cache/captures/payloads.jsonl")),
    ({"NIM_CAPTURE_ENABLE": "1",
      "NIM_CAPTURE_ARGS": '{"path": "/captures/t.jsonl", "format": "mooncake_payload", '
                          '"endpoint_pattern": "^/v1/chat/completions$"}'},
     CaptureConfig("/captures/t.jsonl", "mooncake_payload", DEFAULT_ENDPOINT_PATTERN)),
    ({"NIM_CAPTURE_ENABLE": "1", "NIM_CAPTURE_ARGS": '{"format": "raw_payload", "endpoint_pattern": "^/v1/completions$"}'},
     CaptureConfig(DEFAULT_FILE, "raw_payload", "^/v1/completions$")),
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
        "--middleware", "nim_specdec.server.capture.middleware.CaptureMiddleware"]


def test_middleware_named_in_the_args_is_importable():
    import importlib

    module, _, attr = capture_middleware_args(CaptureConfig("/x.jsonl"))[1].rpartition(".")
    assert callable(getattr(importlib.import_module(module), attr))
