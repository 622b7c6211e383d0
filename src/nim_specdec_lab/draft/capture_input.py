"""The capture a draft is trained on: the two line formats capture writes, read into requests with an id.

mooncake_payload lines (`{"timestamp": ms, "payload": {...}}`) go through the lab's capture reader
(ngram.trace.parse_capture); raw_payload lines (the request body alone) are wrapped into the same shape
first, so both formats get the same checks. The format is the first request line's: a file mixing both,
a capture of another endpoint (no "messages" and no "prompt"), chat mixed with completions, an empty file
or one below the stated minimum is refused with one line naming --capture.

A request's id is the SHA-256 of its payload (canonical JSON): the same prompt captured twice has one id,
so the split (draft.split) never puts a copy of a training prompt among the held-out ones.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from nim_specdec.errors import ConfigError
from nim_specdec.text.strict_json import MAX_DEPTH, depth
from nim_specdec_lab.ngram.trace import CHAT_PATH, COMPLETIONS_PATH, parse_capture

WHERE = "--capture"
MOONCAKE, RAW = "mooncake_payload", "raw_payload"
# Below this many distinct requests a split leaves too few on either side to train or to give an interval.
MIN_REQUESTS = 20
FIX_FORMAT = (
    "give a capture of /v1/chat/completions or /v1/completions written by NIM_CAPTURE_ENABLE=1 "
    "(mooncake_payload or raw_payload lines)"
)


@dataclass(frozen=True)
class DraftRequest:
    id: str  # sha256 of the canonical payload, 16 hex digits
    line: int
    path: str  # CHAT_PATH or COMPLETIONS_PATH
    payload: Mapping[str, Any]
    timestamp_ms: float | None = None


@dataclass(frozen=True)
class Capture:
    format: str
    path: str
    requests: tuple[DraftRequest, ...]  # distinct payloads, first occurrence kept, in file order
    duplicates: int  # lines whose payload an earlier line already held


def request_id(payload: Mapping[str, Any]) -> str:
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _first_object(line: str, number: int) -> Any:
    try:
        if depth(line) > MAX_DEPTH:
            raise RecursionError
        return json.loads(line)
    except (ValueError, RecursionError):
        raise ConfigError(WHERE, f"line {number} is not a JSON object", FIX_FORMAT) from None


def line_format(record: Any, number: int) -> str:
    """Which of capture's formats a parsed line is in."""
    if isinstance(record, dict) and isinstance(record.get("payload"), dict) and set(record) <= {"timestamp", "payload"}:
        return MOONCAKE
    if isinstance(record, dict) and ("messages" in record or "prompt" in record):
        return RAW
    keys = ", ".join(sorted(str(k)[:20] for k in record)[:6]) if isinstance(record, dict) else type(record).__name__
    raise ConfigError(
        WHERE, f"line {number} is neither a chat nor a completion request ({keys or 'empty object'})", FIX_FORMAT
    )


def parse_draft_capture(lines: Sequence[str], minimum: int = MIN_REQUESTS) -> Capture:
    numbered = [(n, line) for n, line in enumerate(lines, start=1) if line.strip()]
    if not numbered:
        raise ConfigError(WHERE, "the capture is empty", "capture traffic first (NIM_CAPTURE_ENABLE=1), then train")
    first_no, first = numbered[0]
    fmt = line_format(_first_object(first, first_no), first_no)
    if fmt == RAW:
        wrapped = []
        for number, line in numbered:
            record = _first_object(line, number)
            if line_format(record, number) != RAW:
                raise ConfigError(WHERE, f"line {number} is mooncake_payload in a raw_payload capture", FIX_FORMAT)
            wrapped.append((number, json.dumps({"payload": record})))
        # parse_capture numbers the lines it is given: pad so that its messages name the file's lines
        by_number = dict(wrapped)
        body = [by_number.get(n, "") for n in range(1, numbered[-1][0] + 1)]
    else:
        body = list(lines)
    captured = parse_capture(body, WHERE)
    if fmt == MOONCAKE:
        for c in captured:
            record = _first_object(lines[c.line - 1], c.line)
            if line_format(record, c.line) != MOONCAKE:
                raise ConfigError(WHERE, f"line {c.line} is raw_payload in a mooncake_payload capture", FIX_FORMAT)
    paths = {c.path for c in captured}
    if len(paths) > 1:
        raise ConfigError(WHERE, "mixes chat and completion requests", "train on one endpoint's capture")
    seen: dict[str, DraftRequest] = {}
    for c in captured:
        rid = request_id(c.payload)
        if rid not in seen:
            seen[rid] = DraftRequest(rid, c.line, c.path, c.payload, c.timestamp_ms)
    requests = tuple(seen.values())
    if len(requests) < minimum:
        raise ConfigError(
            WHERE,
            f"holds {len(requests)} distinct requests, below the minimum of {minimum}",
            f"capture at least {minimum} requests (or lower --min-requests)",
        )
    return Capture(fmt, paths.pop(), requests, len(captured) - len(requests))


def mooncake_lines(requests: Iterable[DraftRequest]) -> str:
    """The requests as a mooncake_payload capture (what bench --trace replays)."""
    return "".join(
        json.dumps({"timestamp": int(r.timestamp_ms or 0), "payload": r.payload}, separators=(",", ":")) + "\n"
        for r in requests
    )


ENDPOINTS = (CHAT_PATH, COMPLETIONS_PATH)
