"""ARCTIC_INFERENCE_ENABLED: refused before anything starts.

The image installs arctic-inference for suffix decoding (its suffix tree, which needs no plugin). The same
package registers a vLLM plugin; `ARCTIC_INFERENCE_ENABLED=1` (exactly "1", as arctic_inference/envs.py reads
it) makes that plugin patch vLLM, and arctic-inference 0.3.0's patches are written for vLLM 0.26.0 only: the
plugin raises (another vLLM release, or a platform other than CUDA) and vLLM does not catch plugin errors, so
every vLLM start fails, after the downloads. Dropping the variable silently would serve without what was
asked for; refusing says so in one line, before any download.
"""

from __future__ import annotations

from nim_specdec.engines.vllm.release.host_vars import ARCTIC_ENV as ENV
from nim_specdec.errors import ConfigError

PATCHED_FOR = "0.26.0"  # arctic_inference.utils.VLLM_PATCH_VERSION of arctic-inference 0.3.0


def refuse_arctic_plugin(plugin_on: bool, vllm_version: str) -> None:
    """`plugin_on`: the switch as the settings read it (VllmHost.arctic_plugin)."""
    if not plugin_on:
        return
    running = f"vLLM {vllm_version}" if vllm_version else "the image's vLLM"
    raise ConfigError(
        ENV,
        f"value '1' turns on arctic-inference's vLLM plugin, whose patches are written for vLLM {PATCHED_FOR}: "
        f"with {running} every start fails",
        "unset it (suffix decoding, method suffix, uses arctic-inference without the plugin)",
    )
