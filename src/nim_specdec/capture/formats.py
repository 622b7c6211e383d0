"""Line formats of the capture file, matched to what AIPerf 0.13.0's dataset loaders read.

Each encoder turns (timestamp in ms, request body bytes) into one JSONL line, or raises
ValueError when the body is not a JSON object (such a body cannot be replayed by either loader).

mooncake_payload  `{"timestamp": <ms>, "payload": <body>}`
    Read by `--custom-dataset-type mooncake_trace` (aiperf/dataset/loader/mooncake_trace.py and the
    `MooncakeTrace` model in aiperf/dataset/loader/models.py): `payload` is "a complete pre-built API
    request payload sent verbatim to the transport", must be a non-empty object, and excludes
    `input_length`/`text_input`/`messages`/`hash_ids` on the same line. `timestamp` is "the timestamp
    of a request in milliseconds" (int or float; written here as an int). A trace whose first record has a timestamp is
    auto-promoted to a fixed schedule (aiperf/config/flags/cli_config.py, `--no-fixed-schedule`), and
    aiperf/timing/strategies/fixed_schedule.py sends each record at `timestamp - zero` ms after the
    benchmark starts, where zero is 0 unless `--fixed-schedule-auto-offset` (then the smallest
    timestamp). So timestamps here are relative, not wall-clock: milliseconds since the first
    matching request this server process received (the arrival time of each request), which makes
    a replay start at once without extra flags and keeps the arrival pattern. With several API
    server processes each process counts from its own first request, so their relative placement
    in a replay is approximate. Records are sorted by timestamp at load, so lines may be out of
    order in the file.

raw_payload  `<body>`
    Read by `--custom-dataset-type raw_payload` (aiperf/dataset/loader/raw_payload.py): in single-file
    mode "each line in the JSONL file is a complete API request payload", parsed with orjson and sent
    verbatim, one single-turn conversation per line; blank lines are skipped. Auto-detection of the
    type needs a `messages` list, so chat payloads are detected; other payloads need the explicit
    `--custom-dataset-type raw_payload`. The format carries no timing. The loader prefers sequential
    sampling and AIPerf sends 10 requests unless told otherwise: `--request-count <lines>` replays
    each line once, in file order.

A body already on one line (what clients send) is written byte for byte; a pretty-printed body is
re-serialized compactly, so that its parsed object stays equal to the one the client sent. Lines end
in \n only, which is where AIPerf's loaders (binary file iteration) split.
"""

from __future__ import annotations

import json
from typing import Callable

Encoder = Callable[[float, bytes], bytes]


class TooDeep(ValueError):  # noqa: N818
    """A body nested deeper than the parser can follow."""


def _no_constant(name: str):
    # NaN and Infinity are not JSON: AIPerf's loader (orjson) would refuse the whole file at replay.
    raise json.JSONDecodeError(f"{name} is not JSON", name, 0)


def _integer(text: str) -> int:
    return 0


def _check(body: bytes) -> bytes:
    """The body as one line of UTF-8 JSON (the client's own bytes when they already are); ValueError if
    it is not a non-empty JSON object."""
    try:
        # Integers are only validated, never converted: int() refuses more than 4300 digits, which a
        # client's JSON may well hold. A lone surrogate escape (\\ud800) is valid JSON text, kept as sent.
        obj = json.loads(body.decode("utf-8"), parse_constant=_no_constant, parse_int=_integer)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ValueError("body is not JSON") from None
    except RecursionError:
        # Deep nesting is valid JSON that the parser cannot hold; it is dropped, never fatal.
        raise TooDeep("body is nested too deeply") from None
    if not isinstance(obj, dict) or not obj:
        raise ValueError("body is not a non-empty JSON object")
    line = body.strip()
    if b"\n" in line or b"\r" in line:
        # Pretty-printed: newlines can only sit between tokens (JSON strings escape them), so each is
        # white space and a blank keeps the object equal, with the client's bytes otherwise untouched.
        line = line.replace(b"\r", b" ").replace(b"\n", b" ")
    return line


def mooncake_payload(timestamp_ms: float, body: bytes) -> bytes:
    return b'{"timestamp":%d,"payload":%s}\n' % (int(round(timestamp_ms)), _check(body))


def raw_payload(timestamp_ms: float, body: bytes) -> bytes:
    return _check(body) + b"\n"


FORMATS: dict[str, Encoder] = {
    "mooncake_payload": mooncake_payload,
    "raw_payload": raw_payload,
}
