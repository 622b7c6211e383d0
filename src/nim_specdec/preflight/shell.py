"""The imperative shell of the pre-flight checks: read the small files and the GPU, decide, report.

It takes the `config.json` files the facts step read (SourceFacts.config), reads safetensors headers (never
weights) and one NVML reading, hands plain data to the pure checks, and turns their outcome into the plan's `preflight`
section. A failure in a category whose mode is `error` becomes a ConfigError (exit 2); in
`warn` mode it is written as a warning line and the launch goes on.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping

from nim_specdec.config.preflight_modes import PreflightModes
from nim_specdec.config.sources import SourceRef
from nim_specdec.engines.vllm.release.vllm_schema import knowledge_for
from nim_specdec.errors import ConfigError, MaterializeError
from nim_specdec.plan.plan_facts import SourceFacts
from nim_specdec.plan.plan_model import Plan
from nim_specdec.plan.plan_sections import PreflightSection
from nim_specdec.preflight.checkpoint import Checkpoint, read_checkpoint
from nim_specdec.preflight.compat import CompatInputs, compatibility_checks, mtp_declaration
from nim_specdec.preflight.config_file import index_shards, read_model_config
from nim_specdec.preflight.context_length import v2_max_model_len_check
from nim_specdec.preflight.gpu import GpuProbe, NvmlProbe
from nim_specdec.preflight.memory import Gpu, MemoryInputs, check_headroom
from nim_specdec.preflight.results import COMPATIBILITY, FAIL, WARN, Check, blocking, section, skipped
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


@dataclass(frozen=True)
class PreflightInputs:
    """The part of a plan the checks read."""

    enabled: bool
    method: str | None = None
    spec_config: Mapping[str, Any] = field(default_factory=dict)
    target_dir: str | None = None  # where the target's files are now (None: not on this machine yet)
    draft_dir: str | None = None
    draft_where: str = "draft"  # how messages name the draft
    engine_args: Mapping[str, Any] = field(default_factory=dict)
    # The config.json files as the facts step read them from those directories (None: read them here).
    target_config: Mapping[str, Any] | None = None
    draft_config: Mapping[str, Any] | None = None
    runner: str = "v1"  # the plan's model_runner: which runner and which vLLM's rules
    vllm_version: str = ""


def _known_config(
    sources: Mapping[str, SourceFacts], ref: SourceRef | None, local_dir: str | None
) -> Mapping[str, Any] | None:
    found = sources.get(ref.uri) if ref is not None and local_dir else None
    return found.config if found is not None and found.local_dir == local_dir else None


def preflight_inputs(plan: Plan, sources: Mapping[str, SourceFacts] = MappingProxyType({})) -> PreflightInputs:
    """`sources`: the facts the plan was built from (Facts.sources), whose configs the checks take."""
    spec, draft = plan.speculative, plan.draft
    config = spec.config or {}
    named = (draft.source or draft.name) if draft else None
    return PreflightInputs(
        enabled=spec.enabled,
        method=spec.method,
        spec_config=config,
        target_dir=plan.target.local_dir,
        draft_dir=draft.local_dir if draft else None,
        draft_where=f"draft {named or config.get('model')}",
        engine_args=plan.engine_args,
        target_config=_known_config(sources, plan.target.ref, plan.target.local_dir),
        draft_config=_known_config(sources, draft.ref, draft.local_dir) if draft else None,
        runner=plan.model_runner.runner if plan.model_runner else "v1",
        vllm_version=plan.model_runner.vllm_version if plan.model_runner else "",
    )


def run_preflight(
    inputs: PreflightInputs,
    modes: PreflightModes,
    gpu: GpuProbe,
    *,
    warn: Callable[[str], None] = _stderr,
) -> PreflightSection:
    """Run the checks the modes ask for; return the plan's `preflight` section or raise ConfigError.
    `gpu`: where the memory reading comes from (NvmlProbe with the server's CUDA_VISIBLE_DEVICES, or a test's)."""
    if modes.all_off:
        return section([], modes)
    if not inputs.enabled:
        return section([skipped(f"{COMPATIBILITY}.speculative", "speculative decoding is not enabled")], modes)
    method = inputs.method
    if not method:
        return section([skipped(f"{COMPATIBILITY}.method", "the speculative config names no method")], modes)
    spec_config = inputs.spec_config
    target_dir, draft_dir = inputs.target_dir, inputs.draft_dir

    target = inputs.target_config if inputs.target_config is not None else _config(target_dir, "target")
    draft = inputs.draft_config if inputs.draft_config is not None else _config(draft_dir, "draft")
    draft_weights = _weights(draft_dir, "draft")
    checks: list[Check] = []
    if modes.compatibility != "off":
        checks = compatibility_checks(
            CompatInputs(
                method,
                spec_config,
                target,
                draft,
                draft_weights,
                inputs.draft_where,
                knowledge_for(inputs.vllm_version),
                inputs.runner,
            )
        )
        shorter = v2_max_model_len_check(
            inputs.vllm_version,
            inputs.runner,
            method,
            spec_config,
            inputs.engine_args,
            target,
            draft,
            inputs.draft_where,
        )
        checks += [shorter] if shorter else []
    if modes.memory != "off":
        readings = gpu.read()
        heads = mtp_declaration(target) if method == "mtp" and target else None
        checks.append(
            check_headroom(
                MemoryInputs(
                    method,
                    spec_config,
                    inputs.engine_args,
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


def with_preflight(
    plan: Plan,
    modes: PreflightModes,
    cuda_visible_devices: str | None,
    warn: Callable[[str], None],
    sources: Mapping[str, SourceFacts] = MappingProxyType({}),
) -> Plan:
    """The plan with its `preflight` section, read on this machine (NVML sees the GPUs the server will see:
    `cuda_visible_devices`, None when unset). `modes`: NIM_SPECDEC_PREFLIGHT as parsed. `sources`: the facts the
    plan was built from; their config.json files are not read again."""
    probe = NvmlProbe(cuda_visible_devices)
    inputs = preflight_inputs(plan, sources)
    return replace(plan, preflight=run_preflight(inputs, modes, probe, warn=warn))
