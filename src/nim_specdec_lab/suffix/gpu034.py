"""vLLM 0.34's GPU suffix speculator (vllm/v1/worker/gpu/spec_decode/suffix/speculator.py), step for step in Python.

0.34 replaced arctic-inference's trees with its own speculator on the V2 runner. What it does, and so what this
model does (tests/suffix/test_gpu034_kernels.py runs vLLM's own kernels in Triton's interpreter against it):
- every step drafts exactly k = num_speculative_tokens tokens: slots without a drafted token hold the last sampled
  token and are verified and counted like any draft (`_suffix_finalize_kernel`);
- the request's own history: the earlier occurrence whose preceding tokens match the longest suffix of the
  history, up to max_tree_depth tokens, the latest on ties (`_suffix_local_scan_kernel`);
- the corpus of finished responses: a ring of `suffix_decoding_corpus_tokens` tokens (0, or
  max_cached_requests 0, or a tree depth below 2: none) holding each finished request's last 3 prompt tokens and
  its response, then a -1 separator; a response that does not fit before the ring's end starts again at 0, the
  oldest tokens overwritten first (`_suffix_ingest_kernel`); every position is indexed under a hash of its
  preceding 4 and 2 tokens, 8 slots per bucket (one per document sequence number mod 8, the newest occurrence
  kept), so collisions and overwritten documents are lost candidates, as on the GPU;
- a corpus draft is voted by the candidates matching at least L tokens for each candidate length L, the chain
  with the highest probability sum wins (`_corpus_draft`); the longer of the two matches wins, the request's own
  history on ties.
Not modelled: adaptive verification (off by default), the index reset after 2^31 documents, several requests
finishing in one step (the simulator sends one request at a time), and max_model_len.
"""

from __future__ import annotations

from dataclasses import dataclass, field

HASH_MUL = 0x9E3779B97F4A7C15 - (1 << 64)
SLOTS = 8
PROMPT_CONTEXT = 3
_MASK64 = (1 << 64) - 1


def _wrap(value: int) -> int:
    """As an int64 register holds it."""
    value &= _MASK64
    return value - (1 << 64) if value >> 63 else value


def _hash_step(hv: int, token: int) -> int:
    return _wrap((hv ^ token) * HASH_MUL)


def _bucket(hv: int, buckets: int) -> int:
    return ((hv >> 29) ^ hv) & (buckets - 1)


def _next_pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


@dataclass
class Corpus:
    """The ring of finished responses and its two hash tables, as the speculator keeps them on the GPU."""

    capacity: int
    buckets: int = 0
    tokens: list[int] = field(default_factory=list)
    table: list[list[int]] = field(default_factory=list)  # [2 * buckets * SLOTS]: 4-token keys, then 2-token keys
    head: int = 0
    doc_seq: int = 0

    def __post_init__(self) -> None:
        self.buckets = _next_pow2(max(16, self.capacity // 4))
        self.tokens = [-1] * max(self.capacity, 1)
        self.table = [[-1] * SLOTS for _ in range(2 * self.buckets)]

    def ingest(self, row: list[int], prompt_len: int) -> None:
        """A finished request: its row is prompt + response."""
        cap, end = self.capacity, len(row)
        start = max(max(prompt_len - PROMPT_CONTEXT, 0), end - (cap - 1))
        n = max(end - start, 0)
        head = 0 if self.head + n + 1 > cap else self.head
        slot = self.doc_seq % SLOTS
        for j in range(n):
            pos = head + j
            self.tokens[pos] = row[start + j]
            hv = 0
            for d in range(4):
                t = row[start + j - 1 - d] if j - 1 - d >= 0 else 0
                hv = _hash_step(hv, t)
                key = (self.buckets + _bucket(hv, self.buckets)) if d == 1 else _bucket(hv, self.buckets)
                if (d == 1 and j >= 2) or (d == 3 and j >= 4):
                    value = (self.doc_seq << 32) | pos
                    self.table[key][slot] = max(self.table[key][slot], value)
        self.tokens[head + n] = -1
        self.head = head + n + 1
        self.doc_seq += 1

    def draft(self, row: list[int], depth: int, k: int) -> tuple[int, list[int]]:
        """(match length, drafted tokens) from the corpus (`_corpus_draft`)."""
        seq_len, corpus_len = len(row), len(self.tokens)
        tail = [row[seq_len - 1 - d] if seq_len - 1 - d >= 0 else -2 for d in range(depth)]
        hv, bucket2 = 0, 0
        for d in range(4):
            hv = _hash_step(hv, row[seq_len - 1 - d] if seq_len - 1 - d >= 0 else 0)
            if d == 1:
                bucket2 = _bucket(hv, self.buckets)
        slots = self.table[_bucket(hv, self.buckets)] + self.table[self.buckets + bucket2]
        cands = []  # (value, position, match length, continuation), in the kernel's candidate order
        for c, value in enumerate(slots):
            key_len = 4 if c < SLOTS else 2
            pos = value & 0xFFFFFFFF
            if value < 0 or pos >= corpus_len or self.tokens[pos] < 0 or seq_len < key_len:
                continue
            length = 0
            while length < depth and pos - 1 - length >= 0 and self.tokens[pos - 1 - length] == tail[length]:
                length += 1
            if length < key_len or any(pos == p for _, p, _, _ in cands):
                continue
            cont = []
            for d in range(min(k, corpus_len - pos)):
                if self.tokens[pos + d] < 0:
                    break
                cont.append(self.tokens[pos + d])
            cands.append((value, pos, length, cont))
        best = (-1, 1, 0, [])  # numerator, denominator, length, chain
        seen: set[int] = set()
        for _, _, length, _ in cands:
            if length in seen:
                continue
            seen.add(length)
            alive = [c for c in cands if c[2] >= length]
            den, num, chain = max(len(alive), 1), 0, []
            for d in range(k):
                col = [(c, c[3][d]) for c in alive if d < len(c[3])]
                if not col or length <= 0:
                    break
                counts = {tok: sum(1 for _, t in col if t == tok) for _, tok in col}
                top = max(counts.values())
                newest = max(c[0] for c, tok in col if counts[tok] == top)
                token = next(tok for c, tok in col if c[0] == newest)
                num += top
                chain.append(token)
                alive = [c for c, tok in col if tok == token]
            if num * best[1] > best[0] * den or (num * best[1] == best[0] * den and best[2] < length):
                best = (num, den, length, chain)
        return best[2], best[3]


def local_draft(row: list[int], depth: int, k: int) -> tuple[int, list[int]]:
    """(match length, drafted tokens) from the request's own history (`_suffix_local_scan_kernel`)."""
    seq_len = len(row)
    best_len, best_pos = 0, 0
    for pos in range(1, seq_len):
        length = 0
        while length < depth and pos - 1 - length >= 0 and row[pos - 1 - length] == row[seq_len - 1 - length]:
            length += 1
        if length and (length, pos) > (best_len, best_pos):
            best_len, best_pos = length, pos
    if not best_len:
        return 0, []
    return best_len, row[best_pos : min(best_pos + k, seq_len)]


def propose(row: list[int], corpus: Corpus | None, depth: int, k: int) -> list[int]:
    """The k tokens one step drafts after sampling `row`'s last token (fillers: that token)."""
    length, draft = local_draft(row, depth, k)
    if corpus is not None:
        g_len, g_draft = corpus.draft(row, depth, k)
        if g_len > length:
            draft = g_draft
    return draft + [row[-1]] * (k - len(draft))
