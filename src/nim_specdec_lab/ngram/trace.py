"""Captured traffic (mooncake_payload lines) and the greedy requests that replay it.

Pure functions: the caller reads the file and does the HTTP.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable

from nim_specdec.errors import ConfigError
from nim_specdec.text.strict_json import MAX_DEPTH, depth

CHAT_PATH = "/v1/chat/completions"
COMPLETIONS_PATH = "/v1/completions"

# Fields that would make the replay non-greedy, multi-choice or streamed.
_DROPPED = ("stream", "stream_options", "n", "best_of", "top_p", "top_k", "min_p", "seed", "use_beam_search")


@dataclass(frozen=True)
class CapturedRequest:
    line: int  # 1-based line number in the capture, for messages
    path: str  # endpoint the payload belongs to
    payload: dict[str, Any]
    timestamp_ms: float | None = None  # arrival time in the capture, when it recorded one


def parse_capture(lines: Iterable[str], where: str = "--trace") -> list[CapturedRequest]:
    """Each non-empty line is {"timestamp": ms, "payload": {chat or completion request}}."""
    captured = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            if ("[" in line or "{" in line) and depth(line) > MAX_DEPTH:  # before parsing: no unbounded recursion
                raise RecursionError
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise ConfigError(
                where, f"line {number} is not JSON ({err.msg})", "each line must be one JSON object"
            ) from None
        except (ValueError, RecursionError) as err:  # an integer of thousands of digits; nesting too deep
            reason = "nested too deeply" if isinstance(err, RecursionError) else str(err)[:120]
            raise ConfigError(
                where, f"line {number} cannot be read ({reason})", "each line must be one JSON object"
            ) from None
        payload = record.get("payload") if isinstance(record, dict) else None
        if not isinstance(payload, dict):
            raise ConfigError(
                where,
                f'line {number} has no "payload" object',
                'expected mooncake_payload lines: {"timestamp": <ms>, "payload": {...}}',
            )
        if "messages" in payload:
            path = CHAT_PATH
        elif "prompt" in payload:
            path = COMPLETIONS_PATH
        else:
            raise ConfigError(
                where,
                f'line {number}: payload has neither "messages" nor "prompt"',
                "capture chat or completion requests",
            )
        stamp = record.get("timestamp")
        timestamp = float(stamp) if isinstance(stamp, (int, float)) and not isinstance(stamp, bool) else None
        captured.append(CapturedRequest(number, path, payload, timestamp))
    if not captured:
        raise ConfigError(
            where, "the capture holds no requests", "point --trace at a non-empty mooncake_payload capture"
        )
    return captured


def greedy_payload(payload: dict[str, Any], model: str | None) -> dict[str, Any]:
    """The same request, decoded greedily, non-streamed, with prompt and output token ids returned."""
    body = {key: value for key, value in payload.items() if key not in _DROPPED}
    body["temperature"] = 0
    body["return_token_ids"] = True
    if model:
        body["model"] = model
    return body


def tail_payload(greedy: dict[str, Any], output_len: int, extra: int) -> dict[str, Any]:
    """A request that continues the greedy output by `extra` tokens past wherever it stopped.

    The server verifies (and counts as accepted) draft tokens beyond the end of a request,
    so the prediction needs the target's own continuation there. Greedy decoding makes this
    request repeat the output first; stops are lifted so it goes on.
    """
    body = {
        key: value for key, value in greedy.items() if key not in ("stop", "stop_token_ids", "max_completion_tokens")
    }
    body["ignore_eos"] = True
    body["max_tokens"] = output_len + extra
    return body


def token_ids(response: dict[str, Any]) -> tuple[list[int], list[int], str | None]:
    """(prompt ids, output ids, finish reason) of a chat or completion response."""
    try:
        choice = response["choices"][0]
        prompt = response.get("prompt_token_ids") or choice.get("prompt_token_ids")
        output = choice["token_ids"]
    except (KeyError, IndexError, TypeError):
        prompt, output, choice = None, None, {}
    if prompt is None or output is None:
        raise ValueError("the response carries no token ids (does the server support return_token_ids?)")
    return [int(t) for t in prompt], [int(t) for t in output], choice.get("finish_reason")
