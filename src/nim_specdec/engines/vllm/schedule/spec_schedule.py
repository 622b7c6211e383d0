"""`num_speculative_tokens_per_batch_size`: vLLM's per-batch-size K schedule, checked by vLLM's rules.

vLLM 0.32 reads the schedule only when the scheduler is built, minutes into a start (after the weights
are loaded), and a bad one then kills the engine. The same rules run here in microseconds. They follow
`vllm/v1/spec_decode/dynamic/utils.py` (validate_and_normalize_dynamic_sd_schedule) and the pydantic
field type `list[tuple[int, int, int]]` in front of it:
- a non-empty list of 3-item entries [first_batch_size, last_batch_size, K] of integers (pydantic's lax
  mode also takes an integral float, a numeric string or a bool; so do we);
- both batch sizes >= 1 and first <= last; K >= 0 (0 turns speculation off at those batch sizes);
- vLLM sorts the ranges by their start, then they must not overlap and the first must start at 1;
- one rule of ours: vLLM silently caps K at num_speculative_tokens, so a larger K is almost certainly a
  mistake and is refused here (raise num_speculative_tokens, which is the largest K, instead).
Batch sizes between or after the ranges take the K of the range before them (vLLM carries it forward).
"""

from __future__ import annotations

from typing import Any

from nim_specdec.engines.protocol.sections import ScheduleRow
from nim_specdec.errors import ConfigError

KEY = "num_speculative_tokens_per_batch_size"
Schedule = tuple[tuple[int, int, int], ...]
_FIX = "write it as [[1, 4, 3], [5, 256, 0]]: ranges [first_batch_size, last_batch_size, K], the first starting at 1"


def _lax_int(value: Any) -> int | None:
    """An integer the way pydantic's lax mode reads one for an `int` field; None when it would refuse."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    if isinstance(value, str):
        try:
            return int(value.strip().replace("_", ""))
        except ValueError:
            return None
    return None


def validate_batch_size_schedule(value: Any, num_speculative_tokens: int | None, where: str) -> Schedule:
    """The schedule sorted by first batch size, or ConfigError naming `where` with the first problem."""
    if not isinstance(value, (list, tuple)) or not value:
        raise ConfigError(where, f"speculative_config.{KEY} = {value!r} is not a non-empty list of ranges", _FIX)
    entries = []
    for entry in value:
        numbers = [_lax_int(item) for item in entry] if isinstance(entry, (list, tuple)) else []
        if len(numbers) != 3 or None in numbers:
            raise ConfigError(where, f"speculative_config.{KEY} entry {entry!r} is not three integers", _FIX)
        first, last, k = numbers
        if first <= 0 or last <= 0:
            raise ConfigError(where, f"speculative_config.{KEY} range ({first}, {last}) must be positive", _FIX)
        if first > last:
            raise ConfigError(where, f"speculative_config.{KEY} range ({first}, {last}) starts after it ends", _FIX)
        if k < 0:
            raise ConfigError(
                where,
                f"speculative_config.{KEY} entry {entry!r} has K = {k} < 0",
                "use K = 0 to turn speculation off at those batch sizes",
            )
        if num_speculative_tokens is not None and k > num_speculative_tokens:
            raise ConfigError(
                where,
                f"speculative_config.{KEY} entry {entry!r} has K = {k} > num_speculative_tokens "
                f"({num_speculative_tokens}); vLLM would silently cap it",
                f"raise num_speculative_tokens to {k} or lower that K",
            )
        entries.append((first, last, k))
    entries.sort(key=lambda item: item[0])
    previous_end = 0
    for first, last, _ in entries:
        if first <= previous_end:
            raise ConfigError(where, f"speculative_config.{KEY} ranges overlap at batch size {first}", _FIX)
        previous_end = last
    if entries[0][0] != 1:
        raise ConfigError(
            where,
            f"speculative_config.{KEY} starts at batch size {entries[0][0]}, not 1",
            "start the first range at 1 so every batch size has a K",
        )
    return tuple(entries)


def k_at(schedule: Schedule, batch_size: int) -> int:
    """K vLLM uses at `batch_size` (before the cap at num_speculative_tokens): a gap or the tail carries
    the previous range's K forward, as vLLM's dense lookup does."""
    k = schedule[0][2]
    for first, _, range_k in schedule:
        if first > batch_size:
            break
        k = range_k
    return k


def describe_schedule(schedule: Schedule) -> list[ScheduleRow]:
    """The schedule as vLLM applies it, for the plan: each range reaches up to the next one's start
    (gaps carry K forward) and the last one is open-ended."""
    rows = []
    for index, (first, _, k) in enumerate(schedule):
        upto = f"{first}-{schedule[index + 1][0] - 1}" if index + 1 < len(schedule) else f"{first}+"
        rows.append(ScheduleRow(upto, k))
    return rows
