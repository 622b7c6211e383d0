"""vLLM 0.34's GPU suffix speculator kernels (vllm/v1/worker/gpu/spec_decode/suffix/speculator.py, read from the
0.34.0 wheel), run on the CPU in Triton's interpreter and driven as SuffixSpeculator drives them.

Only the module's kernels and constants are loaded (the text between its imports and the SuffixSpeculator
class), with the real `triton` in place of vLLM's import: the class needs the rest of vLLM 0.34. Each bound
of that text must appear exactly once, so a changed vLLM fails loudly. The driver passes the launch grids and
arguments that SuffixSpeculator.on_requests_finished and .propose pass (one request slot; adaptive verification
off, its default).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from ngram.vllm_ngram_v2 import interpreting
from vllm_release_source import source

PATH = "vllm/v1/worker/gpu/spec_decode/suffix/speculator.py"
START = "# Odd 64-bit multiplier"
END = "class SuffixSpeculator(BaseSpeculator):"
HEADER = "import triton\nimport triton.language as tl\n\n"


# The interpreter refuses a mask that combines a scalar bool with vectors; the scalar is broadcast to a vector
# first, which computes the same mask (as for the n-gram kernels, tests/ngram/vllm_ngram_v2.py).
REWRITES = (
    (
        "draft_ok = k_mask & (idx < seq_len) & (l_len > 0)",
        "draft_ok = k_mask & (idx < seq_len) & (tl.zeros_like(idx) + l_len > 0)",
    ),
    (
        "draft_ok = draft_ok & (num_sampled > 0)",
        "draft_ok = draft_ok & (tl.zeros_like(k_iota) + num_sampled > 0)",
    ),
    (
        "active = (pos >= 1) & (pos < seq_len) & (num_sampled > 0)",
        "active = (pos >= 1) & (pos < seq_len) & (tl.zeros_like(pos) + num_sampled > 0)",
    ),
    (
        "ok = active & (src_pos >= 0) & (tail_pos >= 0)",
        "ok = active & (src_pos >= 0) & (tl.zeros_like(src_pos) + tail_pos >= 0)",
    ),
)


def kernels_source() -> str:
    text = source("0.34.0", PATH)
    for mark in (START, END, *(old for old, _ in REWRITES)):
        if text.count(mark) != 1:
            raise AssertionError(f"vLLM 0.34's suffix speculator no longer contains {mark!r} exactly once")
    for old, new in REWRITES:
        text = text.replace(old, new)
    return HEADER + text[text.index(START) : text.index(END)]


def load(folder: Path) -> ModuleType:
    path = folder / "vllm034_suffix_kernels.py"
    path.write_text(kernels_source())
    with interpreting():
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        spec.loader.exec_module(module)
    return module


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


class Speculator:
    """One request slot and the corpus state of SuffixSpeculator(k, depth, corpus_tokens, max_model_len)."""

    def __init__(self, kernels: ModuleType, k: int, depth: int, corpus_tokens: int, max_model_len: int):
        import torch
        import triton

        self.torch, self.kernels, self.triton = torch, kernels, triton
        self.k, self.depth, self.max_model_len = k, depth, max_model_len
        n = max_model_len
        self.block_l = 256 if n >= 1024 else 128 if n >= 256 else max(16, triton.next_power_of_2(max(n, 1)))
        self.n_blocks = _cdiv(n, self.block_l)
        self.scratch = torch.zeros((1, self.n_blocks), dtype=torch.int64)
        self.corpus_len = corpus_tokens if depth >= 2 else 0
        self.has_corpus = self.corpus_len > 0
        self.num_buckets = triton.next_power_of_2(max(16, self.corpus_len // 4))
        self.corpus = torch.full((max(self.corpus_len, 1),), -1, dtype=torch.int32)
        slots = kernels._BUCKET_SLOTS
        self.table = torch.full((2, self.num_buckets if self.has_corpus else 1, slots), -1, dtype=torch.int64)
        self.head = torch.zeros(1, dtype=torch.int64)
        self.doc_seq = torch.zeros(1, dtype=torch.int64)
        self.out = torch.zeros(2, dtype=torch.int64)
        self.token_ids = torch.full((1, max_model_len), 12345, dtype=torch.int32)  # stale tokens past the end
        self.total_len = torch.zeros(1, dtype=torch.int32)

    def _row(self, row: list[int]) -> None:
        self.token_ids[0, : len(row)] = self.torch.tensor(row, dtype=self.torch.int32)
        self.total_len[0] = len(row)

    def ingest(self, row: list[int], prompt_len: int) -> None:
        torch, kernels = self.torch, self.kernels
        self._row(row)
        docs = torch.tensor([0, max(prompt_len - kernels._PROMPT_CONTEXT, 0)], dtype=torch.int32)
        with interpreting():
            kernels._suffix_ingest_kernel[(1, _cdiv(self.max_model_len, kernels._INGEST_BLOCK))](
                self.token_ids, self.token_ids.stride(0), docs, 1, self.total_len, self.corpus, self.corpus_len,
                self.head, self.doc_seq, self.out[0:1], self.out[1:2], self.table,
                HASH_MUL=kernels._HASH_MUL, NUM_BUCKETS=self.num_buckets, SLOTS=kernels._BUCKET_SLOTS,
                BLOCK=kernels._INGEST_BLOCK, num_warps=4,
            )  # fmt: skip
        self.head.copy_(self.out[0:1])
        self.doc_seq.copy_(self.out[1:2])

    def propose(self, row: list[int]) -> list[int]:
        torch, kernels, triton = self.torch, self.kernels, self.triton
        self._row(row)
        idx = torch.zeros(1, dtype=torch.int32)
        num_sampled = torch.ones(1, dtype=torch.int32)
        last = torch.tensor([row[-1]], dtype=torch.int64)
        drafts = torch.zeros((1, self.k), dtype=torch.int64)
        num_valid = torch.zeros(1, dtype=torch.int32)
        stats = torch.zeros((2 * 9, self.k, 2), dtype=torch.int64)
        last_bucket = torch.full((1,), -1, dtype=torch.int32)
        last_valid = torch.zeros(1, dtype=torch.int32)
        conf = torch.zeros((1, self.k), dtype=torch.float32)
        k_po2 = max(1, triton.next_power_of_2(self.k))
        with interpreting():
            kernels._suffix_local_scan_kernel[(1, self.n_blocks)](
                self.token_ids, self.token_ids.stride(0), idx, self.total_len, num_sampled, self.scratch,
                self.scratch.stride(0), self.max_model_len + 1, MAX_DEPTH=self.depth, BLOCK=self.block_l,
                num_warps=4,
            )  # fmt: skip
            kernels._suffix_finalize_kernel[(1,)](
                self.token_ids, self.token_ids.stride(0), idx, self.total_len, num_sampled, last.view(-1),
                self.scratch, self.scratch.stride(0), self.n_blocks, self.max_model_len + 1, self.corpus,
                self.corpus.shape[0], self.table, drafts, num_valid, stats, last_bucket, last_valid, conf,
                HAS_CORPUS=self.has_corpus, ADAPTIVE=False, HASH_MUL=kernels._HASH_MUL,
                NUM_BUCKETS=self.num_buckets, SLOTS=kernels._BUCKET_SLOTS, MAX_DEPTH=self.depth,
                DEPTH_PO2=triton.next_power_of_2(self.depth), K=self.k, K_PO2=k_po2,
                NB_PO2=max(1, triton.next_power_of_2(self.n_blocks)), num_warps=4,
            )  # fmt: skip
        return [int(x) for x in drafts[0]]
