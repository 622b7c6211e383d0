"""Both capture formats read into the same requests; the request id is the payload's hash."""

from __future__ import annotations

import json

import pytest

from nim_specdec.errors import ConfigError
from nim_specdec_lab.draft.capture_input import (
    MOONCAKE,
    RAW,
    mooncake_lines,
    parse_draft_capture,
    request_id,
)
from nim_specdec_lab.ngram.trace import CHAT_PATH, COMPLETIONS_PATH

CHATS = [{"messages": [{"role": "user", "content": f"q{i}"}], "max_tokens": 8, "temperature": 0.9} for i in range(20)]


def test_raw_and_mooncake_give_the_same_requests():
    raw = parse_draft_capture([json.dumps(p) for p in CHATS])
    moon = parse_draft_capture([json.dumps({"timestamp": i, "payload": p}) for i, p in enumerate(CHATS)])
    assert (raw.format, moon.format) == (RAW, MOONCAKE)
    assert [r.id for r in raw.requests] == [r.id for r in moon.requests]
    assert [r.payload for r in raw.requests] == CHATS and raw.path == CHAT_PATH


def test_raw_capture_errors_name_the_file_line():
    lines = [json.dumps(p) for p in CHATS[:3]] + ["", json.dumps({"timestamp": 1, "payload": CHATS[4]})]
    with pytest.raises(ConfigError, match="line 5 is mooncake_payload"):
        parse_draft_capture(lines, minimum=1)


def test_completions_capture():
    lines = [json.dumps({"prompt": f"Once upon a time {i}", "max_tokens": 4}) for i in range(20)]
    assert parse_draft_capture(lines).path == COMPLETIONS_PATH


def test_chat_and_completions_mixed_is_refused():
    lines = [json.dumps(p) for p in CHATS] + [json.dumps({"prompt": "x"})]
    with pytest.raises(ConfigError, match="mixes chat and completion"):
        parse_draft_capture(lines)


def test_id_ignores_key_order_and_the_written_form_round_trips():
    assert request_id({"a": 1, "b": [2]}) == request_id({"b": [2], "a": 1})
    parsed = parse_draft_capture([json.dumps(p) for p in CHATS])
    again = parse_draft_capture(mooncake_lines(parsed.requests).splitlines())
    assert [r.id for r in again.requests] == [r.id for r in parsed.requests]
