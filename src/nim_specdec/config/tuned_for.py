"""NIM_TUNED_FOR: the engine a `nim-specdec tune` recommendation was measured on, carried with its variables.

tune writes it next to NIM_SPECDEC_ENABLE and NIM_SPECDEC_ARGS, e.g.
`NIM_TUNED_FOR={"vllm": "0.32.0", "runner": "v1", "platform": "cpu", "device": "AMD EPYC 7B12"}`. The plan
compares it with the engine it will serve on (its model_runner, and its device where both are known) and warns
where they differ: the recommendation's speed-ups were measured on the other engine. `device` is optional;
other keys are ignored, so that a later tune may add some.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from nim_specdec.config import variables as var
from nim_specdec.errors import ConfigError
from nim_specdec.text.strict_json import loads

ENV = var.TUNED_FOR
RUNNERS = ("v1", "v2")
PLATFORMS = ("cuda", "rocm", "xpu", "cpu")  # the platforms vLLM runs on that a plan knows
_FIX = 'use the value tune printed, e.g. {"vllm": "0.32.0", "runner": "v1", "platform": "cpu"}, or unset it'


@dataclass(frozen=True)
class TunedFor:
    vllm: str
    runner: str
    platform: str
    device: str | None = None  # the GPU's name or the CPU model; None: not compared


def parse_tuned_for(raw: str | None) -> TunedFor | None:
    """The marker as a typed value; None when unset or empty; ConfigError (exit 2) when it cannot be read."""
    if raw is None or not raw.strip():
        return None
    shown = raw.strip()[:80]
    try:
        value: Any = loads(raw, ENV)  # nesting, duplicate keys and huge numbers: one line naming the variable
    except ConfigError as err:
        problem = f"invalid value {shown!r} is not JSON" if err.problem.startswith("invalid JSON") else err.problem
        raise ConfigError(ENV, problem, _FIX) from None
    if not isinstance(value, dict):
        raise ConfigError(ENV, f"invalid value {shown!r} is not a JSON object", _FIX)
    for key in ("vllm", "runner", "platform"):
        if not isinstance(value.get(key), str) or not value[key].strip():
            raise ConfigError(ENV, f"invalid value {shown!r}: {key!r} is missing or not a string", _FIX)
    if value["runner"] not in RUNNERS:
        raise ConfigError(
            ENV, f"invalid runner {value['runner'][:20]!r} in {shown!r}", f"use one of {', '.join(RUNNERS)}"
        )
    if value["platform"] not in PLATFORMS:
        raise ConfigError(
            ENV, f"invalid platform {value['platform'][:20]!r} in {shown!r}", f"use one of {', '.join(PLATFORMS)}"
        )
    device = value.get("device")
    if device is not None and not isinstance(device, str):
        raise ConfigError(ENV, f"invalid value {shown!r}: 'device' is not a string", _FIX)
    return TunedFor(value["vllm"].strip(), value["runner"], value["platform"], " ".join((device or "").split()) or None)


def engine_differences(tuned: TunedFor, serving: Mapping[str, str]) -> list[str]:
    """What differs between the engine tune measured and `serving` (keys vllm, runner, platform), in words."""
    found = []
    if tuned.platform != serving["platform"]:
        found.append(f"platform {tuned.platform} -> {serving['platform']}")
    if tuned.vllm != serving["vllm"]:
        found.append(f"vLLM {tuned.vllm} -> {serving['vllm']}")
    if tuned.runner != serving["runner"]:
        found.append(f"model runner {tuned.runner.upper()} -> {serving['runner'].upper()}")
    device = " ".join((serving.get("device") or "").split())
    if tuned.device and device and tuned.device != device:
        found.append(f"device {tuned.device} -> {device}")
    return found


def tuned_for_warning(
    tuned: TunedFor | None, vllm: str, runner: str, platform: str, device: str | None = None
) -> str | None:
    """One warning line when the recommendation was measured on another engine than the one that will serve."""
    if tuned is None:
        return None
    found = engine_differences(tuned, {"vllm": vllm, "runner": runner, "platform": platform, "device": device or ""})
    if not found:
        return None
    return (
        f"{ENV}: the tuned speculative settings were measured on another engine ({', '.join(found)}); "
        "their speed-ups may not hold here: run nim-specdec tune on this engine"
    )
