"""vLLM 0.34's native suffix drafter for the V2 model runner (`SuffixSpeculator`), as pure Python.

On vLLM 0.34 method "suffix" no longer goes through arctic-inference: the GPU speculator in
vllm/v1/worker/gpu/spec_decode/suffix/speculator.py drafts with Triton kernels. This module computes
the same drafts, one request at a time, so that the simulator can predict a 0.34 server's counters:

- the request's own history: the earlier occurrence whose preceding tokens match the longest suffix of
  the context (at most `max_tree_depth` tokens), the later one on ties; the draft continues after it;
- a corpus of finished responses (a ring of `corpus_tokens` int32 slots, documents separated by -1,
  the oldest overwritten first), indexed by a hash of the 2 and of the 4 tokens before each position,
  8 slots per bucket (one per document number modulo 8, the newest position kept); each candidate is
  verified against the corpus and extended to its full match length, and the draft is voted token by
  token among the candidates matching at least L tokens, the chain with the highest summed vote share
  winning (ties: the longer L). The corpus draft replaces the local one only when its match is longer;
- always K drafts: positions without a draft token hold the last sampled token.

The integer arithmetic (64-bit wrapping hash, arithmetic shifts, the bucket count) is the kernels'. The
adaptive-verification statistics change confidences only (dspark), never drafts, and are not modelled.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

HASH_MUL = 0x9E3779B97F4A7C15 - (1 << 64)
BUCKET_SLOTS = 8
PROMPT_CONTEXT = 3  # prompt tokens stored ahead of each response
_MASK64 = (1 << 64) - 1


def _i64(value: int) -> int:
    value &= _MASK64
    return value - (1 << 64) if value >> 63 else value


def _next_pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def _bucket(hv: int, buckets: int) -> int:
    return ((hv >> 29) ^ hv) & (buckets - 1)


@dataclass(frozen=True)
class GpuSuffixParams:
    """The speculative-config keys the 0.34 GPU suffix speculator reads."""

    k: int
    max_tree_depth: int = 24
    corpus_tokens: int = 1 << 20
    max_cached_requests: int = 10000  # only 0 matters on 0.34: it turns the corpus off

    def __post_init__(self) -> None:
        if self.k < 1 or self.max_tree_depth < 1 or not 0 <= self.corpus_tokens < (1 << 31):
            raise ValueError(f"invalid GPU suffix setting {self}: need k >= 1, depth >= 1, 0 <= corpus < 2**31")

    def speculative_config(self) -> dict:
        return {
            "method": "suffix",
            "num_speculative_tokens": self.k,
            "suffix_decoding_max_tree_depth": self.max_tree_depth,
            "suffix_decoding_max_cached_requests": self.max_cached_requests,
            "suffix_decoding_corpus_tokens": self.corpus_tokens,
        }

    @property
    def has_corpus(self) -> bool:
        # A depth under 2 cannot form the 2-token key: vLLM drafts from each request's own history then.
        return self.corpus_tokens > 0 and self.max_cached_requests != 0 and self.max_tree_depth >= 2


@dataclass
class GpuSuffixState:
    """The speculator's state across requests: the corpus ring and its two hash tables."""

    params: GpuSuffixParams
    corpus: list[int] = field(init=False)
    tables: tuple[list[list[int]], list[list[int]]] = field(init=False)  # (4-token, 2-token) buckets x slots
    head: int = 0
    doc_seq: int = 0

    def __post_init__(self) -> None:
        cap = self.params.corpus_tokens if self.params.has_corpus else 0
        self.capacity = cap
        self.buckets = _next_pow2(max(16, cap // 4))
        self.corpus = [-1] * max(cap, 1)
        self.tables = tuple([[-1] * BUCKET_SLOTS for _ in range(self.buckets)] for _ in range(2))

    def ingest(self, documents: Sequence[Sequence[int]]) -> None:
        """Finished requests' tokens (from `PROMPT_CONTEXT` prompt tokens before the response on), in the
        order vLLM ingests them (sorted request ids)."""
        if not self.params.has_corpus:
            return
        cap = self.capacity
        for doc in documents:
            doc = list(doc)[-(cap - 1) :] if cap > 1 else []
            n = len(doc)
            if self.head + n + 1 > cap:
                self.head = 0
            head, slot, seq = self.head, self.doc_seq % BUCKET_SLOTS, self.doc_seq
            self.corpus[head : head + n] = doc
            self.corpus[head + n] = -1
            for j in range(n):
                hv = 0
                for d in range(4):
                    tok = doc[j - 1 - d] if j - 1 - d >= 0 else 0
                    hv = _i64((hv ^ tok) * HASH_MUL)
                    if (d == 1 and j >= 2) or (d == 3 and j >= 4):
                        row = self.tables[0 if d == 3 else 1][_bucket(hv, self.buckets)]
                        row[slot] = max(row[slot], (seq << 32) | (head + j))
            self.head = head + n + 1
            self.doc_seq += 1

    def propose(self, context: Sequence[int], last_token: int) -> tuple[list[int], int]:
        """(the K draft tokens, how many of them are real) for a request whose tokens so far are `context`."""
        k = self.params.k
        l_len, l_pos = local_match(context, self.params.max_tree_depth)
        draft = [context[l_pos + i] for i in range(k) if l_len > 0 and l_pos + i < len(context)]
        if self.params.has_corpus:
            g_len, g_chain = self._corpus_draft(context)
            if g_len > l_len:
                draft = g_chain
        return draft + [last_token] * (k - len(draft)), len(draft)

    def _corpus_draft(self, context: Sequence[int]) -> tuple[int, list[int]]:
        depth, k, corpus, cap = self.params.max_tree_depth, self.params.k, self.corpus, self.capacity
        seq_len = len(context)
        tail = [context[seq_len - 1 - d] if seq_len - 1 - d >= 0 else -2 for d in range(depth)]
        hv, keys = 0, {}
        for d in range(4):
            tok = context[seq_len - 1 - d] if seq_len - 1 - d >= 0 else 0
            hv = _i64((hv ^ tok) * HASH_MUL)
            if d in (1, 3):
                keys[d] = _bucket(hv, self.buckets)
        vals = self.tables[0][keys[3]] + self.tables[1][keys[1]]
        key_len = [4] * BUCKET_SLOTS + [2] * BUCKET_SLOTS
        cpos, c_len, ok = [], [], []
        for c, val in enumerate(vals):
            pos = val & 0xFFFFFFFF
            n = 0
            while val >= 0 and n < depth and pos - 1 - n >= 0 and corpus[pos - 1 - n] == tail[n]:
                n += 1
            nxt = corpus[pos] if val >= 0 and pos < cap else -1
            cpos.append(pos)
            c_len.append(n)
            ok.append(val >= 0 and nxt >= 0 and n >= key_len[c] and seq_len >= key_len[c])
        # A position found through both keys counts once; candidates of one length score once.
        ok = [ok[j] and not any(ok[i] and cpos[i] == cpos[j] for i in range(j)) for j in range(len(vals))]
        first = [ok[j] and not any(ok[i] and c_len[i] == c_len[j] for i in range(j)) for j in range(len(vals))]
        cont = []
        for c in range(len(vals)):
            row = []
            for i in range(k):
                tok = corpus[cpos[c] + i] if ok[c] and cpos[c] + i < cap else -1
                if tok < 0:
                    break
                row.append(tok)
            cont.append(row)
        best = (-1, 1, 0, [])  # (vote sum, candidates, L, chain)
        for i in range(len(vals)):
            if not first[i]:
                continue
            length = c_len[i]
            alive = [ok[c] and c_len[c] >= length for c in range(len(vals))]
            den = max(sum(alive), 1)
            num, chain = 0, []
            for d in range(k):
                col = {c: cont[c][d] for c in range(len(vals)) if alive[c] and d < len(cont[c])}
                if not col:
                    break
                votes = {tok: sum(1 for t in col.values() if t == tok) for tok in col.values()}
                top = max(votes.values())
                newest = max(vals[c] for c, t in col.items() if votes[t] == top)
                token = next(t for c, t in col.items() if vals[c] == newest)
                num += top
                chain.append(token)
                alive = [c in col and col[c] == token for c in range(len(vals))]
            b_num, b_den, b_len, _ = best
            if num * b_den > b_num * den or (num * b_den == b_num * den and b_len < length):
                best = (num, den, length, chain)
        return best[2], best[3]


def local_match(context: Sequence[int], depth: int) -> tuple[int, int]:
    """(match length, draft start) of the request's own history: the longest match of the context's last
    `depth` tokens ending before some position, the latest position on ties; (0, 0) without one."""
    seq_len = len(context)
    best_len = best_pos = 0
    last = context[-1] if context else None
    for pos in range(1, seq_len):
        if context[pos - 1] != last:
            continue
        n = 0
        while n < depth and pos - 1 - n >= 0 and context[pos - 1 - n] == context[seq_len - 1 - n]:
            n += 1
        if n > best_len or (n == best_len and n > 0):
            best_len, best_pos = n, pos
    return best_len, best_pos
