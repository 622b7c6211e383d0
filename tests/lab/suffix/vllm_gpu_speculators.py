"""vLLM's V2 speculators (n-gram and, from 0.34, suffix) loaded from a release's source without vLLM installed.

A speculator module imports a few vLLM names that the drafting path uses only as types, a logger and a
host-to-device copy; each such import line is replaced by a stand-in, and each replacement must apply
exactly once, so that a changed vLLM fails loudly instead of testing something else. Triton is the real
one: on a GPU the kernels compile as vLLM's do; on the CPU they run in Triton's interpreter
(TRITON_INTERPRET=1, set before Triton is imported). Everything else, the block sizes, the launch grids,
the kernels and their arguments, is vLLM's. Used by the tests (interpreter) and bench/gpu_speculators.py.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Sequence

STAND_INS = {
    "from vllm.config import VllmConfig\n": "VllmConfig = object\n",
    "from vllm.logger import init_logger\n": "import logging\ninit_logger = logging.getLogger\n",
    "from vllm.triton_utils import HAS_TRITON, tl, triton\n": (
        "import triton\nimport triton.language as tl\nHAS_TRITON = True\n"
    ),
    "from vllm.utils.torch_utils import async_tensor_h2d\n": (
        "def async_tensor_h2d(data, device, dtype):\n    return torch.tensor(data, dtype=dtype, device=device)\n"
    ),
    "from vllm.v1.worker.gpu.input_batch import InputBatch\n": "InputBatch = object\n",
    "from vllm.v1.worker.gpu.spec_decode.speculator import BaseSpeculator\n": "BaseSpeculator = object\n",
}
TRITON_LINE = "from vllm.triton_utils import HAS_TRITON, tl, triton\n"
NGRAM_PATH = "vllm/v1/worker/gpu/spec_decode/ngram/speculator.py"
SUFFIX_PATH = "vllm/v1/worker/gpu/spec_decode/suffix/speculator.py"


def interpreter_masks_as_bool() -> None:
    """Triton's interpreter refuses a load or store mask made of a scalar bool and a vector (the compiler
    broadcasts it): masks are made boolean arrays of the pointers' shape before each masked memory op.
    A fix to the interpreter, so vLLM's kernels run unchanged (the GPU run checks the same drafts)."""
    import numpy as np
    from triton.runtime import interpreter

    builder = interpreter.InterpreterBuilder
    if getattr(builder, "_masks_as_bool", False):
        return

    def fixed(mask, ptrs):
        data = np.broadcast_to(np.asarray(mask.data).astype(np.bool_), np.shape(ptrs.data)).copy()
        return interpreter.TensorHandle(data, mask.dtype)

    load, store, rmw = builder.create_masked_load, builder.create_masked_store, builder.create_atomic_rmw
    builder.create_masked_load = lambda self, ptrs, mask, *a: load(self, ptrs, fixed(mask, ptrs), *a)
    builder.create_masked_store = lambda self, ptrs, value, mask, *a: store(self, ptrs, value, fixed(mask, ptrs), *a)
    builder.create_atomic_rmw = lambda self, op, ptr, val, mask, *a: rmw(self, op, ptr, val, fixed(mask, ptr), *a)
    builder._masks_as_bool = True


def rewrite(source: str, extra: Sequence[tuple[str, str]] = ()) -> str:
    if source.count(TRITON_LINE) != 1:
        raise AssertionError("the speculator no longer imports Triton through vllm.triton_utils exactly once")
    for line in [line for line in source.splitlines(keepends=True) if line.startswith(("from vllm", "import vllm"))]:
        if line not in STAND_INS:
            raise AssertionError(f"the speculator imports {line.strip()!r}, which has no stand-in here")
    for old, new in [*STAND_INS.items(), *extra]:
        count = source.count(old)
        if count > 1 or (count == 0 and (old, new) in extra):
            raise AssertionError(f"expected {old.strip()!r} once in the speculator, found it {count} times")
        source = source.replace(old, new)
    return source


def load(source: str, folder: Path, stem: str, extra: Sequence[tuple[str, str]] = ()) -> ModuleType:
    """The rewritten module, imported from a file in `folder` (Triton's jit reads the source back)."""
    path = folder / f"{stem}.py"
    path.write_text(rewrite(source, extra))
    spec = importlib.util.spec_from_file_location(stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[stem] = module
    spec.loader.exec_module(module)
    return module


class Slots:
    """The request state a V2 speculator reads: token rows, lengths, prompt lengths, ids to slots."""

    def __init__(self, slots: int, max_model_len: int, device):
        import numpy as np
        import torch

        self.torch, self.device = torch, device
        self.token_ids = torch.full((slots, max_model_len), 12345, dtype=torch.int32, device=device)
        self.total_len = torch.zeros(slots, dtype=torch.int32, device=device)
        self.last_sampled = torch.zeros((slots, 1), dtype=torch.int64, device=device)
        self.states = SimpleNamespace(
            all_token_ids=SimpleNamespace(gpu=self.token_ids),
            total_len=SimpleNamespace(gpu=self.total_len),
            prompt_len=SimpleNamespace(np=np.zeros(slots, dtype=np.int32)),
            req_id_to_index={},
        )

    def put(self, slot: int, tokens: Sequence[int]) -> None:
        torch = self.torch
        self.token_ids[slot, : len(tokens)] = torch.tensor(list(tokens), dtype=torch.int32, device=self.device)
        self.total_len[slot] = len(tokens)
        self.last_sampled[slot, 0] = int(tokens[-1])

    def call(self, speculator, contexts: Sequence[Sequence[int]], slots: Sequence[int]):
        torch = self.torch
        for slot, context in zip(slots, contexts):
            self.put(slot, context)
        batch = SimpleNamespace(
            num_reqs=len(contexts), idx_mapping=torch.tensor(list(slots), dtype=torch.int32, device=self.device)
        )
        num_sampled = torch.ones(len(contexts), dtype=torch.int32, device=self.device)
        args = (batch, None, None, None, None, num_sampled, torch.zeros_like(num_sampled), self.last_sampled)
        return speculator.propose(*args, None, None, None).tolist()


def _config(k: int, slots: int, max_model_len: int, **spec) -> SimpleNamespace:
    return SimpleNamespace(
        speculative_config=SimpleNamespace(num_speculative_tokens=k, **spec),
        scheduler_config=SimpleNamespace(max_num_seqs=slots),
        model_config=SimpleNamespace(max_model_len=max_model_len),
    )


class SuffixDrafter:
    """vLLM 0.34's `SuffixSpeculator` with request slots; drafts a batch, ingests finished requests."""

    def __init__(self, module, k, depth, corpus_tokens, max_model_len, slots, device, max_cached=10000):
        self.slots = Slots(slots, max_model_len, device)
        config = _config(
            k,
            slots,
            max_model_len,
            suffix_decoding_max_tree_depth=depth,
            suffix_decoding_corpus_tokens=corpus_tokens,
            suffix_decoding_max_cached_requests=max_cached,
            enable_adaptive_verification=False,
        )
        self.speculator = module.SuffixSpeculator(config, device, self.slots.states)

    def propose(self, contexts: Sequence[Sequence[int]], slots: Sequence[int]) -> list[tuple[list[int], int]]:
        drafts = self.slots.call(self.speculator, contexts, slots)
        valid = self.speculator.num_valid[: len(contexts)].tolist()
        return list(zip(drafts, valid))

    def finish(self, documents: Sequence[tuple[str, int, Sequence[int], int]]) -> None:
        """Requests (id, slot, tokens, prompt length) finishing together."""
        states = self.slots.states
        for req_id, slot, tokens, prompt_len in documents:
            self.slots.put(slot, tokens)
            states.prompt_len.np[slot] = prompt_len
            states.req_id_to_index[req_id] = slot
        self.speculator.on_requests_finished([d[0] for d in documents])
        for req_id, *_ in documents:
            states.req_id_to_index.pop(req_id)


class NgramDrafter:
    """vLLM's V2 `NgramGPUSpeculator` with request slots."""

    def __init__(self, module, k, min_n, max_n, max_model_len, slots, device):
        self.slots = Slots(slots, max_model_len, device)
        config = _config(k, slots, max_model_len, prompt_lookup_min=min_n, prompt_lookup_max=max_n)
        self.speculator = module.NgramGPUSpeculator(config, device, self.slots.states)

    def propose(self, contexts: Sequence[Sequence[int]], slots: Sequence[int]) -> list[list[int]]:
        return self.slots.call(self.speculator, contexts, slots)


def kernel_replay(drafter: SuffixDrafter, records: Sequence, max_model_len: int) -> list[tuple[int, int, int]]:
    """(drafts, draft tokens, accepted) of each greedy request sent one at a time, drafted by vLLM's kernels
    in slot 0 and ingested when it ends: the loop of `simulate_suffix_gpu`, with the kernels in its place."""
    k = drafter.speculator.num_speculative_steps
    counts = []
    for i, rec in enumerate(records):
        full = list(rec.prompt) + list(rec.output) + list(rec.tail)
        p, end = len(rec.prompt), len(rec.prompt) + len(rec.output)
        ctx, c = p + 1, [0, 0, 0]
        while ctx < end:
            ((draft, _),) = drafter.propose([full[:ctx]], [0])
            draft = draft[: max(0, min(k, max_model_len - ctx - 1))]
            hit = 0
            if draft:
                while hit < len(draft) and ctx + hit < len(full) and draft[hit] == full[ctx + hit]:
                    hit += 1
                c[0], c[1], c[2] = c[0] + 1, c[1] + len(draft), c[2] + hit
            ctx += hit + 1
        drafter.finish([(f"req-{i:06d}", 0, full[: min(ctx, len(full))], p)])
        counts.append(tuple(c))
    return counts


def suffix_batches(rng, vocab: int, length: int, batches: int, slots: int):
    """Finished documents and batches of contexts; half the contexts end in a span of an earlier document,
    so that the corpus, not only the request's own history, supplies drafts."""
    docs_so_far: list[list[int]] = []
    for b in range(batches):
        docs = []
        for i in range(rng.randint(1, 4)):
            tokens = [rng.randrange(vocab) for _ in range(rng.randint(1, min(length, 90)))]
            docs.append((f"d{b:04d}-{i}", i, tokens, rng.randint(1, len(tokens))))
            docs_so_far.append(tokens)
        contexts = []
        for _ in range(slots):
            context = [rng.randrange(vocab) for _ in range(rng.randint(1, min(length // 2, 40)))]
            if rng.random() < 0.5:
                doc = rng.choice(docs_so_far)
                a = rng.randrange(len(doc))
                context += doc[a : a + rng.randint(1, 12)]
            contexts.append(context[: length - 1])
        yield docs, contexts
