"""Token streams of recorded greedy requests, with the n-gram occurrence tables every grid point shares.

The proposer's question at a step is: for the context of T tokens and each n, does the
n-token suffix occur earlier (ending before the last token), and where first? Contexts only
grow, so the first occurrence of an n-gram never moves. That makes the answer a property of
the position alone, independent of (k, min, max): it is computed here once, for every step
position of every request and every n up to `max_ngram`, with sorting instead of hashing so
that it is exact. vLLM's V2 model runner takes the latest earlier occurrence instead
(`occurrence="last"`): the previous occurrence of the suffix's own n-gram, also a property of
the position alone.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Sequence

import numpy as np

# Vocabularies are far smaller; ids at or above this are not token ids.
MAX_TOKEN_ID = 2**31


@dataclass(frozen=True)
class RecordedRequest:
    """One greedy completion: prompt ids, output ids, and the ids that would follow the output."""

    prompt: tuple[int, ...]
    output: tuple[int, ...]
    tail: tuple[int, ...] = ()

    @classmethod
    def of(cls, prompt: Sequence[int], output: Sequence[int], tail: Sequence[int] = ()) -> "RecordedRequest":
        """ValueError for an id that is not a whole number from 0 to 2**31 - 1: the corpus pads with -1
        and stores 64-bit integers, so a negative or huge id would match padding or overflow."""
        return cls(_ids(prompt), _ids(output), _ids(tail))


def _ids(values: Sequence[int]) -> tuple[int, ...]:
    if isinstance(values, (str, bytes, dict)):
        raise ValueError("token ids are not a list")
    ids = []
    for value in values:
        try:
            number = operator.index(value) if not isinstance(value, bool) else -1  # numpy integers too
        except TypeError:
            number = -1
        if not 0 <= number < MAX_TOKEN_ID:
            raise ValueError(f"token id {str(value)[:24]!r} is not a whole number from 0 to {MAX_TOKEN_ID - 1}")
        ids.append(number)
    return tuple(ids)


@dataclass(frozen=True)
class Corpus:
    """Concatenated streams plus, per step position, where each n-gram suffix first occurred.

    Step positions ("queries") are the context lengths at which the proposer runs and its
    draft is verified: prompt + 1 .. prompt + output - 1 tokens, for each request.
    """

    tokens: np.ndarray  # all requests' prompt + output + tail, concatenated, padded with -1
    query_pos: np.ndarray  # index in `tokens` of the first token to verify (= the context's end)
    query_ctx_len: np.ndarray  # context length T at that step
    query_stream_end: np.ndarray  # end (exclusive) of this request's known tokens in `tokens`
    query_next_limit: np.ndarray  # first query index past this request's last step
    query_request: np.ndarray  # request index of each query
    first_queries: np.ndarray  # query index of each request's first step (requests with steps)
    longest: np.ndarray  # longest n <= max_ngram whose suffix occurs earlier
    draft_start: np.ndarray  # [n - 1, query]: index in `tokens` where the draft for n starts
    max_ngram: int
    num_requests: int
    prompt_tokens: int
    output_tokens: int
    occurrence: str = "first"  # which earlier occurrence draft_start points after: "first" or "last"

    @property
    def num_queries(self) -> int:
        return int(self.query_pos.shape[0])


def _group_first(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dense group id of each key, and the smallest index holding the same key."""
    # An unstable sort is about twice as fast; the smallest index per group is taken explicitly.
    order = np.argsort(keys)
    ordered = keys[order]
    fresh = np.empty(ordered.shape[0], dtype=bool)
    fresh[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=fresh[1:])
    starts = np.flatnonzero(fresh)
    group_sorted = np.cumsum(fresh) - 1
    groups = np.empty_like(group_sorted)
    groups[order] = group_sorted
    return groups, np.minimum.reduceat(order, starts)[groups]


def _group_previous(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dense group id of each key, and the largest smaller index holding the same key (-1 if none)."""
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    fresh = np.empty(ordered.shape[0], dtype=bool)
    fresh[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=fresh[1:])
    groups = np.empty(ordered.shape[0], dtype=np.int64)
    groups[order] = np.cumsum(fresh) - 1
    previous = np.empty(ordered.shape[0], dtype=np.int64)
    previous[order] = np.where(fresh, -1, np.roll(order, 1))
    return groups, previous


def _extend_groups(
    groups: np.ndarray, unigram: np.ndarray, vocab: int, n: int, latest: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Group ids and first (or, with `latest`, previous) occurrences of n-grams from those of (n-1)-grams.

    An n-gram can repeat only where its (n-1)-gram prefix repeats, so only those starts are
    sorted; every other start is its own group and its own first occurrence.
    """
    count = groups.shape[0] - 1  # starts of n-grams
    repeated = np.flatnonzero(np.bincount(groups)[groups[:count]] > 1)
    new_groups = np.arange(count, dtype=np.int64)
    first = np.full(count, -1, dtype=np.int64) if latest else np.arange(count, dtype=np.int64)
    if repeated.size:
        keys = groups[repeated] * vocab + unigram[repeated + n - 1]
        sub_groups, sub_at = _group_previous(keys) if latest else _group_first(keys)
        new_groups += int(sub_groups.max()) + 1
        new_groups[repeated] = sub_groups
        # `repeated` ascends, so an order inside it is an order of positions.
        first[repeated] = np.where(sub_at >= 0, repeated[sub_at], -1)
    return new_groups, first


def build_corpus(
    requests: Sequence[RecordedRequest], max_ngram: int, pad: int = 64, occurrence: str = "first"
) -> Corpus:
    if max_ngram < 1:
        raise ValueError("max_ngram must be at least 1")
    if occurrence not in ("first", "last"):
        raise ValueError(f"occurrence must be 'first' or 'last', not {occurrence!r}")
    latest = occurrence == "last"
    lengths = np.array([len(r.prompt) + len(r.output) + len(r.tail) for r in requests], dtype=np.int64)
    bases = np.concatenate(([0], np.cumsum(lengths)[:-1])) if len(requests) else np.zeros(0, np.int64)
    stream = np.fromiter(
        (t for r in requests for part in (r.prompt, r.output, r.tail) for t in part),
        dtype=np.int64,
        count=int(lengths.sum()),
    )
    size = stream.shape[0]
    labels = np.repeat(np.arange(len(requests), dtype=np.int64), lengths)

    # Queries: context lengths prompt+1 .. prompt+output-1 of each request.
    p_lens = np.array([len(r.prompt) for r in requests], dtype=np.int64)
    o_lens = np.array([len(r.output) for r in requests], dtype=np.int64)
    n_steps = np.maximum(o_lens - 1, 0)
    q_offsets = np.concatenate(([0], np.cumsum(n_steps))) if len(requests) else np.zeros(1, np.int64)
    q_req = np.repeat(np.arange(len(requests), dtype=np.int64), n_steps)
    q_local = np.arange(q_req.shape[0], dtype=np.int64) - q_offsets[q_req]
    q_ctx = p_lens[q_req] + 1 + q_local
    q_pos = bases[q_req] + q_ctx

    longest = np.zeros(q_pos.shape[0], dtype=np.int64)
    draft_start = np.full((max_ngram, q_pos.shape[0]), -1, dtype=np.int64)
    if size:
        # n = 1: a token equals another only within the same request.
        keys = (labels << 32) | (stream & 0xFFFFFFFF)
        groups, first = _group_previous(keys) if latest else _group_first(keys)
        unigram, vocab = groups, int(groups.max()) + 1
        for n in range(1, max_ngram + 1):
            if n > 1:
                if size - n + 1 <= 0:
                    break
                groups, first = _extend_groups(groups, unigram, vocab, n, latest)
            suffix_start = q_pos - n
            inside = suffix_start >= bases[q_req]
            safe = np.where(inside, suffix_start, 0)
            earlier = first[safe]
            # `first` is -1 where the latest table has no previous occurrence.
            valid = inside & (earlier >= 0) & (earlier < safe)
            # Occurrence of n implies occurrence of n - 1, so the count of valid n is the longest.
            longest += valid
            draft_start[n - 1] = np.where(valid, earlier + n, -1)

    padded = np.concatenate((stream, np.full(pad, -1, dtype=np.int64)))
    has_steps = n_steps > 0
    return Corpus(
        tokens=padded,
        query_pos=q_pos,
        query_ctx_len=q_ctx,
        query_stream_end=(bases + lengths)[q_req],
        query_next_limit=q_offsets[1:][q_req] if len(requests) else q_req,
        query_request=q_req,
        first_queries=q_offsets[:-1][has_steps],
        longest=longest,
        draft_start=draft_start,
        max_ngram=max_ngram,
        num_requests=len(requests),
        prompt_tokens=int(p_lens.sum()),
        output_tokens=int(o_lens.sum()),
        occurrence=occurrence,
    )
