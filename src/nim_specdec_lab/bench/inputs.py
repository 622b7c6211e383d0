"""The requests bench replays: a mooncake_payload capture (one category, the file's name), or SPEED-Bench's
categories mixed into one workload, each request labelled with its category, so that one run per
configuration measures them all and each response's acceptance counts for its own category.

Reading the files is the caller's edge; these functions take their lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from nim_specdec.errors import ConfigError, LauncherError
from nim_specdec.text.strict_json import FILE_INT_DIGITS, loads
from nim_specdec_lab.ngram.trace import parse_capture

SPEED_BENCH_CATEGORIES = (
    "coding humanities math multilingual qa rag reasoning roleplay stem summarization writing".split()
)
SPEED_BENCH = "speed-bench"  # the mixed workload's name in reports and run folders


@dataclass(frozen=True)
class Workload:
    category: str
    requests: tuple[Mapping[str, Any], ...]
    timestamps_ms: tuple[int, ...] | None  # every request's arrival time, or None when any is missing
    note: str = ""
    labels: tuple[str, ...] | None = None  # each request's category; None: all of them `category`

    def request_labels(self) -> tuple[str, ...]:
        return self.labels if self.labels is not None else (self.category,) * len(self.requests)


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
        try:  # strict: nesting checked before parsing, so a hostile line cannot exhaust the recursion limit
            row = loads(line, "--speed-bench", ConfigError, FILE_INT_DIGITS, quote=False)
        except LauncherError:
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


def speed_bench_mix(categories: Iterable[str], lines: Sequence[str]) -> Workload:
    """The rows of `categories` in one workload, taken in turn from each category (coding, math, ..., coding,
    math, ...): a closed loop then has the same mix from start to end, and a --request-count below the
    total still samples every category alike."""
    parts = [from_speed_bench(c, lines) for c in categories]
    requests: list[Mapping[str, Any]] = []
    labels: list[str] = []
    for i in range(max(len(p.requests) for p in parts)):
        for part in parts:
            if i < len(part.requests):
                requests.append(part.requests[i])
                labels.append(part.category)
    notes = [f"{p.category}: {p.note}" for p in parts if p.note]
    return Workload(SPEED_BENCH, tuple(requests), None, "; ".join(notes), tuple(labels))
