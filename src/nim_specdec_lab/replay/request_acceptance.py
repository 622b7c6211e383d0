"""Each response's own acceptance (pure: AIPerf's record lines in, typed records out).

A vLLM 0.32 server started with `--per-request-spec-decode-metrics summary` puts the request's acceptance in
its response, under `metrics.speculative_decoding` (streamed: on the last chunk, the one with the usage):
`num_spec_steps`, `num_draft_tokens`, `num_accepted_draft_tokens`, `num_spec_tokens`,
`acceptance_histogram` (dense: index j holds the verify steps that accepted exactly j drafts),
`mean_acceptance_length` and `draft_acceptance_rate`. The server counts them where it counts its
`vllm:spec_decode_*` counters, so over a run they add up to the counters' growth. AIPerf 0.13 reads that
object and keeps it per record in `profile_export.jsonl` as `spec_decode_acceptance` (the same counts, the
histogram made sparse: `{"j": steps}`), beside the record's `metadata.conversation_id`. The replay names
each trace line's session (`session_id`, which AIPerf keeps as the conversation id), so a record leads back
to the request that was sent and the category it belongs to.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from nim_specdec.errors import ConfigError, LauncherError
from nim_specdec.text.strict_json import FILE_INT_DIGITS, loads
from nim_specdec_lab.replay import checked

SESSION_PREFIX = "r"
RECORDS_JSONL = "profile_export.jsonl"
PER_REQUEST_FLAG = "--per-request-spec-decode-metrics"


def with_per_request_metrics(args: Sequence[str], speculating: bool) -> list[str]:
    """vLLM 0.32 has --per-request-spec-decode-metrics (summary: each response's acceptance); it refuses
    the flag on a server without speculation, so only a speculating side gets it, unless the user set it."""
    if not speculating or any(a == PER_REQUEST_FLAG or a.startswith(PER_REQUEST_FLAG + "=") for a in args):
        return list(args)
    return [*args, PER_REQUEST_FLAG, "summary"]


def session_id(index: int) -> str:
    """The session a trace line is sent in: its request's index."""
    return f"{SESSION_PREFIX}{index}"


def request_index(conversation_id: Any) -> int | None:
    text = conversation_id if isinstance(conversation_id, str) else ""
    number = text[len(SESSION_PREFIX) :] if text.startswith(SESSION_PREFIX) else ""
    return int(number) if number.isdigit() else None


@dataclass(frozen=True)
class RequestAcceptance:
    """One response's acceptance: which request, what category, and the server's counts for it."""

    request: int
    label: str
    steps: int  # verify steps that had drafts (the counters' `num_drafts`)
    draft_tokens: int
    accepted: int
    histogram: tuple[int, ...]  # steps that accepted exactly j drafts, j = 0 .. num_speculative_tokens

    def per_position(self) -> tuple[int, ...]:
        """Steps whose draft position p (1-based) was accepted: acceptance is a prefix, so j >= p."""
        return tuple(sum(self.histogram[p:]) for p in range(1, len(self.histogram)))

    def to_json(self) -> list[Any]:
        return [self.request, self.label, self.steps, self.draft_tokens, self.accepted, list(self.histogram)]

    @classmethod
    def from_json(cls, row: Sequence[Any]) -> "RequestAcceptance":
        request, label, steps, drafts, accepted, histogram = row
        return cls(
            checked.count(request, "requests_acceptance request"),
            str(label),
            checked.count(steps, "requests_acceptance steps"),
            checked.count(drafts, "requests_acceptance draft_tokens"),
            checked.count(accepted, "requests_acceptance accepted"),
            tuple(checked.count(v, "requests_acceptance histogram") for v in histogram),
        )


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _dense(histogram: Any, width: int | None) -> tuple[int, ...] | None:
    """AIPerf's sparse {"j": steps} (or vLLM's own dense list) as a dense tuple of `width` + 1 buckets."""
    if isinstance(histogram, list):
        counts = [_count(v) for v in histogram]
        return None if None in counts else tuple(counts)  # type: ignore[arg-type]
    if not isinstance(histogram, Mapping):
        return None
    pairs = {}
    for key, value in histogram.items():
        j, count = int(key) if str(key).isdigit() else None, _count(value)
        if j is None or count is None:
            return None
        pairs[j] = count
    top = max([*pairs, width or 0])
    return tuple(pairs.get(j, 0) for j in range(top + 1))


def parse_record(record: Mapping[str, Any], labels: Sequence[str]) -> RequestAcceptance | None:
    """One record of profile_export.jsonl: its acceptance, or None when it carries none (a server without
    the per-request metrics, a failed request, a record of another replay)."""
    found = record.get("spec_decode_acceptance")
    metadata = record.get("metadata")
    if not isinstance(found, Mapping) or not isinstance(metadata, Mapping):
        return None
    index = request_index(metadata.get("conversation_id"))
    if index is None or not 0 <= index < len(labels):
        return None
    steps, drafts, accepted = (
        _count(found.get(k)) for k in ("num_spec_steps", "num_draft_tokens", "num_accepted_draft_tokens")
    )
    histogram = _dense(found.get("acceptance_histogram"), _count(found.get("num_spec_tokens")))
    if steps is None or drafts is None or accepted is None or histogram is None:
        return None
    # The histogram is the per-step view of the same counts: a record where they disagree is corrupt.
    if sum(histogram) != steps or sum(j * n for j, n in enumerate(histogram)) != accepted or accepted > drafts:
        return None
    return RequestAcceptance(index, labels[index], steps, drafts, accepted, histogram)


def parse_records(lines: Iterable[str], labels: Sequence[str]) -> tuple[RequestAcceptance, ...] | None:
    """Every record's acceptance, in the file's order; None when no record carried one (the server did
    not report per-request acceptance)."""
    found = []
    for line in lines:
        if not line.strip():
            continue
        try:  # strict: nesting checked before parsing, so a hostile line cannot exhaust the recursion limit
            record = loads(line, "records", ConfigError, FILE_INT_DIGITS, quote=False)
        except LauncherError:
            continue  # a line cut short by a run that was stopped
        one = parse_record(record, labels) if isinstance(record, Mapping) else None
        if one is not None:
            found.append(one)
    return tuple(found) if found else None
