"""The imperative shell of the pre-flight checks: read the small files and the GPU, decide, report.

It reads `config.json` files, safetensors headers (never weights) and one NVML reading,
hands plain data to the pure checks, and turns their outcome into the plan's `preflight`
section. A failure in a category whose mode is `error` becomes a ConfigError (exit 2); in
`warn` mode it is written as a warning line and the launch goes on.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable, Mapping

from nim_specdec.errors import ConfigError, MaterializeError
from nim_specdec.preflight.config_file import index_shards, read_model_config
from nim_specdec.preflight.checkpoint import Checkpoint, read_checkpoint
from nim_specdec.preflight.compat import CompatInputs, compatibility_checks, mtp_declaration
from nim_specdec.preflight.gpu import GpuProbe, NvmlProbe
from nim_specdec.preflight.memory import Gpu, MemoryInputs, check_headroom
from nim_specdec.preflight.results import (
    COMPATIBILITY,
    FAIL,
    MEMORY,
    WARN,
    Check,
    blocking,
    parse_modes,
    section,
    skipped,
)
from nim_specdec.preflight.safetensors_header import INDEX_NAME, HeaderError

_REDOWNLOAD = "remove the model's directory from the cache and start again to download it anew"


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)


def _config(local_dir: str | None, who: str) -> dict[str, Any] | None:
    """The model's config.json; a bad one stops the launch (exit 3, naming the file): vLLM could not load it."""
    if not local_dir or not (Path(local_dir) / "config.json").is_file():
        return None
    return read_model_config(Path(local_dir), f"{who} model")


def _weights(local_dir: str | None, who: str) -> Checkpoint | None:
    if not local_dir:
        return None
    try:
        return read_checkpoint(Path(local_dir), f"{who} model")
    except HeaderError as err:
        raise MaterializeError(f"{who} model", str(err), _REDOWNLOAD) from None


def _target_weight_bytes(local_dir: str | None) -> int | None:
    """The target's size; a sharded checkpoint's index states it, which saves reading every shard."""
    if not local_dir:
        return None
    if (Path(local_dir) / INDEX_NAME).is_file():
        try:
            _, total = index_shards(Path(local_dir), "target model")
        except HeaderError as err:
            raise MaterializeError("target model", str(err), _REDOWNLOAD) from None
        if total:
            return total
    ckpt = _weights(local_dir, "target")
    return ckpt.total_bytes if ckpt else None


def run_preflight(
    plan: Mapping[str, Any],
    env: Mapping[str, str],
    gpu: GpuProbe | None = None,
    *,
    warn: Callable[[str], None] = _stderr,
) -> dict[str, Any]:
    """Run the checks the plan's modes ask for; return its `preflight` section or raise ConfigError."""
    modes = parse_modes(env)
    if all(mode == "off" for mode in modes.values()):
        return section([], modes)
    spec = plan.get("speculative") or {}
    if not spec.get("enabled"):
        return section([skipped(f"{COMPATIBILITY}.speculative", "speculative decoding is not enabled")], modes)
    method = spec.get("method")
    if not method:
        return section([skipped(f"{COMPATIBILITY}.method", "the speculative config names no method")], modes)
    spec_config = spec.get("config") or {}
    draft_info = plan.get("draft") or {}
    target_dir = (plan.get("target") or {}).get("local_dir")
    draft_dir = draft_info.get("local_dir")
    where = f"draft {draft_info.get('source') or draft_info.get('name') or spec_config.get('model')}"

    target = _config(target_dir, "target")
    draft = _config(draft_dir, "draft")
    draft_weights = _weights(draft_dir, "draft")
    checks: list[Check] = []
    if modes[COMPATIBILITY] != "off":
        checks = compatibility_checks(CompatInputs(method, spec_config, target, draft, draft_weights, where))
    if modes[MEMORY] != "off":
        readings = (gpu or NvmlProbe(env)).read()
        heads = mtp_declaration(target) if method == "mtp" and target else None
        checks.append(
            check_headroom(
                MemoryInputs(
                    method,
                    spec_config,
                    plan.get("engine_args") or {},
                    target,
                    _target_weight_bytes(target_dir),
                    draft if method != "mtp" else None,
                    draft_weights.total_bytes if draft_weights else None,
                    heads[1] if heads else None,
                    tuple(Gpu(int(t), int(u), str(n)) for t, u, n in readings) if readings is not None else None,
                )
            )
        )

    stop = blocking(checks, modes)
    if stop is not None:
        raise ConfigError(stop.where, stop.problem, stop.fix)
    for check in checks:
        if check.result in (WARN, FAIL):
            warn(f"nim-specdec: warning: pre-flight {check.name}: {check.message}")
    return section(checks, modes)
