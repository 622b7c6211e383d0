"""vLLM's own V2 n-gram drafter (`NgramGPUSpeculator` and its Triton kernels), run on the CPU.

The installed module is loaded from its source with two rewrites, each required to apply
exactly once so that a changed vLLM fails loudly instead of testing something else:
- it gets the real `triton` (vLLM's `triton_utils` hands out a placeholder where Triton has no
  CPU backend), and is loaded with TRITON_INTERPRET=1 so the kernels run in Triton's interpreter;
- the interpreter refuses one mask of `_ngram_finalize_kernel` that combines a scalar bool with
  vectors; the scalar is broadcast to a vector first, which computes the same mask.
Everything else, the block size, the launch grids and the kernels' arguments, is vLLM's.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Sequence

IMPORT_LINE = "from vllm.triton_utils import HAS_TRITON, tl, triton\n"
REAL_TRITON = "import triton\nimport triton.language as tl\nHAS_TRITON = True\n"
SCALAR_MASK = "(k_iota < tokens_avail) & write_ok & k_in_range"
VECTOR_MASK = "(k_iota < tokens_avail) & (tl.zeros_like(k_iota) + write_ok.to(tl.int64) > 0) & k_in_range"


def installed_source() -> str:
    root = importlib.util.find_spec("vllm").submodule_search_locations[0]
    return (Path(root) / "v1/worker/gpu/spec_decode/ngram/speculator.py").read_text()


def rewrite(source: str) -> str:
    for old in (IMPORT_LINE, SCALAR_MASK):
        if source.count(old) != 1:
            raise AssertionError(f"vLLM's n-gram speculator no longer contains {old.strip()!r} exactly once")
    return source.replace(IMPORT_LINE, REAL_TRITON).replace(SCALAR_MASK, VECTOR_MASK)


_BUILTINS: dict[int, list] = {}


def _patch_builtin_cached(pkg, builder, scope) -> None:
    """The interpreter's `_patch_builtin`, listing a package's builtins once instead of at every call.

    The interpreter wraps each builtin of triton.language at every launch and at every call of a
    jit helper (tl.max, tl.sum, ...), listing the package's members each time: half the run time
    here. The builtins never change, and wrapping an original again where a call is nested
    computes the same thing, so the results are those of the interpreter itself.
    """
    import inspect

    import triton.language as tl
    from triton.runtime import interpreter

    members = _BUILTINS.get(id(pkg))
    if members is None:
        members = _BUILTINS[id(pkg)] = [(n, m) for n, m in inspect.getmembers(pkg) if tl.core.is_builtin(m)]
    for name, member in members:
        interpreter._patch_attr(pkg, name, member, builder, scope)


@contextmanager
def interpreting(fast: bool = True):
    """Triton asks for the interpreter when it is imported, when it wraps a kernel and when it launches one."""
    if "triton.language" in sys.modules:
        import triton.language.standard as standard

        # Triton decides at import whether its own jit helpers (tl.sum, tl.max, ...) are interpreted: a process
        # that imported it first without the interpreter cannot run these kernels in it.
        if type(standard.sum).__name__ != "InterpretedFunction":
            raise AssertionError(
                "triton was imported without TRITON_INTERPRET=1 in this process: run the tests "
                "marked `interpreter` in a pytest process of their own, with TRITON_INTERPRET=1 (make test does)"
            )
    before = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1"
    from triton.runtime import interpreter

    original = interpreter._patch_builtin
    if fast:
        interpreter._patch_builtin = _patch_builtin_cached
    try:
        yield
    finally:
        interpreter._patch_builtin = original
        if before is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = before


def load(folder: Path) -> ModuleType:
    """The rewritten module, imported from a file in `folder` (Triton's jit reads the source back)."""
    path = folder / "vllm_ngram_speculator_interpreted.py"
    path.write_text(rewrite(installed_source()))
    with interpreting():
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        spec.loader.exec_module(module)
    return module


class Drafter:
    """One `NgramGPUSpeculator` for (k, min, max, max_model_len), with request slots like vLLM's RequestState."""

    def __init__(self, module: ModuleType, k: int, min_n: int, max_n: int, max_model_len: int, slots: int):
        import torch

        self.torch = torch
        config = SimpleNamespace(
            speculative_config=SimpleNamespace(
                num_speculative_tokens=k, prompt_lookup_min=min_n, prompt_lookup_max=max_n
            ),
            scheduler_config=SimpleNamespace(max_num_seqs=slots),
            model_config=SimpleNamespace(max_model_len=max_model_len),
        )
        self.k, self.max_model_len, self.slots = k, max_model_len, slots
        self.token_ids = torch.full((slots, max_model_len), 12345, dtype=torch.int32)  # stale tokens past each end
        self.total_len = torch.zeros(slots, dtype=torch.int32)
        self.last_sampled = torch.zeros((slots, 1), dtype=torch.int64)
        states = SimpleNamespace(
            all_token_ids=SimpleNamespace(gpu=self.token_ids), total_len=SimpleNamespace(gpu=self.total_len)
        )
        self.speculator = module.NgramGPUSpeculator(config, torch.device("cpu"), states)

    def propose(
        self, contexts: Sequence[Sequence[int]], slots: Sequence[int] | None = None, fast: bool = True
    ) -> list[list[int]]:
        """The drafts for a batch of contexts, each held in its own slot (batch order != slot order)."""
        torch = self.torch
        slots = list(slots) if slots is not None else list(range(len(contexts)))[::-1]
        for slot, context in zip(slots, contexts):
            self.token_ids[slot, : len(context)] = torch.tensor(list(context), dtype=torch.int32)
            self.total_len[slot] = len(context)
            self.last_sampled[slot, 0] = int(context[-1])
        batch = SimpleNamespace(num_reqs=len(contexts), idx_mapping=torch.tensor(slots, dtype=torch.int64))
        num_sampled = torch.ones(len(contexts), dtype=torch.int32)
        with interpreting(fast):
            drafts = self.speculator.propose(
                batch,
                None,
                None,
                None,
                None,
                num_sampled,
                torch.zeros_like(num_sampled),
                self.last_sampled,
                None,
                None,
                None,
            )
        return drafts.tolist()


def replay(drafter: Drafter, requests: Sequence) -> list[tuple[int, int, int, tuple[int, ...], int]]:
    """(drafts, draft tokens, accepted, accepted per position, steps) of each greedy request, stepped
    with vLLM's kernels: all running requests are drafted in one launch per step, each in its own slot.

    The loop around the drafter is vLLM's V2 model runner and scheduler for one greedy request: k
    drafts every step after the prefill, trimmed so the verified positions stay inside the model
    length, counted when at least one is scheduled, accepted while they equal the target's tokens.
    """
    k, length = drafter.k, drafter.max_model_len
    full = [list(r.prompt) + list(r.output) + list(r.tail) for r in requests]
    produced = [1] * len(requests)
    counts = [[0, 0, 0, [0] * k, 0] for _ in requests]
    while True:
        running = [i for i, r in enumerate(requests) if produced[i] < len(r.output)]
        if not running:
            break
        contexts = [full[i][: len(requests[i].prompt) + produced[i]] for i in running]
        for i, draft in zip(running, drafter.propose(contexts, slots=running)):
            total = len(requests[i].prompt) + produced[i]
            draft = draft[: max(0, length - total - 1)]
            c = counts[i]
            c[4] += 1
            if not draft:
                produced[i] += 1
                continue
            hits = 0
            while hits < len(draft) and total + hits < len(full[i]) and draft[hits] == full[i][total + hits]:
                hits += 1
            c[0] += 1
            c[1] += len(draft)
            c[2] += hits
            for pos in range(hits):
                c[3][pos] += 1
            produced[i] += hits + 1
    return [(c[0], c[1], c[2], tuple(c[3]), c[4]) for c in counts]
