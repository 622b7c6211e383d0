"""The requests a bench category replays: a mooncake_payload capture, or one SPEED-Bench category.

Reading the files is the caller's edge; these functions take their lines.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from nim_specdec.errors import ConfigError
from nim_specdec_lab.ngram.trace import parse_capture

SPEED_BENCH_CATEGORIES = (
    "coding humanities math multilingual qa rag reasoning roleplay stem summarization writing".split()
)


@dataclass(frozen=True)
class Workload:
    category: str
    requests: tuple[Mapping[str, Any], ...]
    timestamps_ms: tuple[int, ...] | None  # every request's arrival time, or None when any is missing
    note: str = ""


def from_capture(category: str, lines: Iterable[str]) -> Workload:
    captured = parse_capture(lines)
    if len({c.path for c in captured}) != 1:
        raise ConfigError("--trace", "mixes chat and completion payloads", "capture one endpoint per trace")
    stamps = [c.timestamp_ms for c in captured]
    timestamps = tuple(int(s) for s in stamps) if all(s is not None for s in stamps) else None
    return Workload(category, tuple(c.payload for c in captured), timestamps)


def first_turn(messages: list[Any]) -> list[Any]:
    """Messages up to and including the first user message: one request per SPEED-Bench row."""
    for i, message in enumerate(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return messages[: i + 1]
    return messages[:1]


def from_speed_bench(category: str, lines: Iterable[str]) -> Workload:
    """The rows of `category` from SPEED-Bench's qualitative.jsonl, each as its first turn."""
    requests = []
    multi = 0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            raise ConfigError(
                "--speed-bench", f"qualitative.jsonl line {number} is not JSON", "run SPEED-Bench's prepare.py again"
            ) from None
        if not isinstance(row, dict) or row.get("category") != category:
            continue
        messages = row.get("messages")
        if not isinstance(messages, list) or not messages:
            raise ConfigError(
                "--speed-bench",
                f"qualitative.jsonl line {number} has no messages",
                "run SPEED-Bench's prepare.py again",
            )
        turn = first_turn(messages)
        multi += len(turn) < len(messages)
        requests.append({"messages": turn})
    if not requests:
        raise ConfigError(
            "--categories",
            f"no rows of category {category!r} in qualitative.jsonl",
            "check the category and the prepared file",
        )
    note = f"{multi} multi-turn rows replayed as their first turn" if multi else ""
    return Workload(category, tuple(requests), None, note)
