"""The line encoders: one JSON object per line, the payload equal to the request body."""

from __future__ import annotations

import json

import pytest

from nim_specdec.capture.formats import FORMATS, mooncake_payload, raw_payload

BODY = {"model": "m", "messages": [{"role": "user", "content": "line one\nline \u2603 two"}], "stream": True}


def test_mooncake_line():
    pretty = json.dumps(BODY, indent=2).encode()
    line = mooncake_payload(1234.6, pretty)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line) == {"timestamp": 1235, "payload": BODY}


def test_raw_line():
    line = raw_payload(5.0, json.dumps(BODY).encode())
    assert line.count(b"\n") == 1
    assert json.loads(line) == BODY


def test_one_line_bodies_are_kept_byte_for_byte():
    body = '{"model": "m",  "messages": [{"role": "user", "content": "caf\u00e9 \\n \u2028"}], "top_p": 1.0e0}'.encode()
    assert raw_payload(0.0, b"  " + body + b"\r\n") == body + b"\n"
    assert mooncake_payload(7.2, body) == b'{"timestamp":7,"payload":' + body + b"}\n"
    assert json.loads(mooncake_payload(7.2, body).split(b"\n")[0])["payload"] == json.loads(body)


@pytest.mark.parametrize("name", sorted(FORMATS))
@pytest.mark.parametrize(
    "body", [b"", b"not json", b"[1, 2]", b"{}", b"\xff\xfe", b'"text"', '{"a": 1}'.encode("utf-16")]
)
def test_bodies_that_cannot_be_replayed_are_refused(name, body):
    with pytest.raises(ValueError):
        FORMATS[name](0.0, body)


@pytest.mark.parametrize("name", sorted(FORMATS))
@pytest.mark.parametrize(
    "body",
    [
        b'{"model": "m", "prompt": "\\ud800 lone"}',  # a lone surrogate escape: valid JSON text
        b'{"model": "m", "seed": ' + b"9" * 5000 + b"}",  # more digits than int() converts
        b'{\n  "model": "m",\n  "prompt": "\\udfff",\n  "n": ' + b"1" * 5000 + b"\n}",  # pretty-printed too
    ],
)
def test_valid_json_that_python_cannot_convert_is_kept_not_dropped(name, body):
    line = FORMATS[name](3.0, body)
    assert line.count(b"\n") == 1 and line.endswith(b"\n")
    payload = line if name == "raw_payload" else line[len(b'{"timestamp":3,"payload":') : -2] + b"\n"
    assert payload.rstrip(b"\n") == body.replace(b"\n", b" ").strip()
    assert json.loads(line, parse_int=len)  # still one JSON document
