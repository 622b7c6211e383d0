"""The engine tune measured on and the engine its recommendation will serve on, as plain data.

Each server's record takes a value from the server's own log where vLLM states it (tune.engines.engine_log), else
from the launcher's plan for that server's environment, and names the source of each. The serving engine is
the launcher's runner choice (engines.vllm.release.runner_choice) for `--serving-platform` / `--serving-vllm-version`; a
schedule it would drop (engines.vllm.schedule.schedule_rules) is not recommended, and what differs from the measured
servers is said in words, with what it means for the figures.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from nim_specdec.engines.vllm.release.async_rules import keeps_async
from nim_specdec.engines.vllm.release.runner_choice import (
    RunnerInputs,
    choose_model_runner,
    cudagraph_mode_given,
    rules_version,
    version_key,
)
from nim_specdec.engines.vllm.schedule.schedule_rules import ScheduleDrop, schedule_cudagraph_downgrade, schedule_drop
from nim_specdec_lab.tune.engines.engine_log import LoggedEngine

LOG, PLAN, RULE = "server log", "launcher plan", "launcher plan (vLLM's rules)"


def async_scheduling(
    view: Mapping[str, Any],
    platform: str,
    runner: str,
    method: str | None,
    vllm_version: str,
    spec: Mapping[str, Any] | None = None,
) -> bool:
    """Whether vLLM schedules asynchronously, as VllmConfig.__post_init__ decides it when not asked: off on the
    CPU build (its platform hook has the last word) and where asked off. vLLM 0.32 turns it off, on either
    runner, for a method outside async_rules.ASYNC_METHODS (ngram, suffix) and for `disable_padded_drafter_batch`; 0.33
    does so on the V1 runner only, so V2 (the GPU default) serves n-gram with async scheduling on; 0.34 has V2 alone
    and keeps it on for every method, suffix included. Pipeline parallelism turns it off on V1 in 0.32 and 0.33.
    Asked on where vLLM would not keep it, vLLM refuses to start."""
    if platform == "cpu":
        return False
    given = view.get("async_scheduling")
    if isinstance(given, bool):
        return given
    if runner == "v1" or version_key(rules_version(vllm_version)) < (0, 33):
        if not keeps_async(method):
            return False
        if method is not None and (spec or {}).get("disable_padded_drafter_batch") is True:
            return False
    return not (runner == "v1" and int(view.get("pipeline_parallel_size", 1) or 1) > 1)


@dataclass(frozen=True)
class PlannedEngine:
    """What the launcher's plan for one server's environment says about its engine."""

    vllm_version: str
    platform: str
    runner: str
    cudagraph_mode: str  # after the schedule's downgrade; NONE on the CPU build, which captures no CUDA graphs
    async_scheduling: bool
    method: str | None  # None: speculation off
    cudagraph_downgrade: str | None = None


def planned_engine(shown: Mapping[str, Any]) -> PlannedEngine:
    """From the plan's public JSON (`nim-specdec plan`)."""
    runner, view = shown["model_runner"], shown["engine_args"]
    method = shown["speculative"].get("method") if shown["speculative"].get("enabled") else None
    mode = "NONE" if runner["platform"] == "cpu" else cudagraph_mode_given(view)
    if runner.get("cudagraph_downgrade"):
        mode = "PIECEWISE"
    return PlannedEngine(
        runner["vllm_version"],
        runner["platform"],
        runner["runner"],
        mode,
        async_scheduling(
            view,
            runner["platform"],
            runner["runner"],
            method,
            runner["vllm_version"],
            shown["speculative"].get("config"),
        ),
        method,
        runner.get("cudagraph_downgrade"),
    )


FIELDS = ("vllm_version", "platform", "runner", "cudagraph_mode", "async_scheduling")


def engine_record(logged: LoggedEngine, planned: PlannedEngine, device: Mapping[str, Any]) -> dict[str, Any]:
    """One server's engine: each value from its log where the log states it, else the plan's; `sources` says which."""
    record: dict[str, Any] = {"device": dict(device), "method": planned.method}
    sources: dict[str, str] = {"device": device.get("source", "none")}
    for key in FIELDS:
        value = getattr(logged, key)
        record[key] = value if value is not None else getattr(planned, key)
        sources[key] = LOG if value is not None else (RULE if key == "async_scheduling" else PLAN)
    record["cudagraph_downgrade"] = planned.cudagraph_downgrade
    record["sources"] = sources
    return record


@dataclass(frozen=True)
class ServingEngine:
    vllm_version: str
    platform: str
    runner: str
    reason: str
    drop: ScheduleDrop | None = None  # the schedule asked about would be dropped there
    cudagraph_downgrade: str | None = None  # the schedule asked about costs full CUDA graphs there

    def to_json(self) -> dict[str, Any]:
        return {
            "vllm_version": self.vllm_version,
            "platform": self.platform,
            "runner": self.runner,
            "reason": self.reason,
            "cudagraph_downgrade": self.cudagraph_downgrade,
            "schedule_dropped": None if self.drop is None else self.drop.reason,
        }


def serving_engine(version: str, platform: str, inputs: RunnerInputs, use_v2: bool | None) -> ServingEngine:
    """The runner that will serve these inputs, and the fate of their schedule (inputs.schedule) there.
    ConfigError (exit 2) where vLLM would refuse to start that runner."""
    choice = choose_model_runner(version, platform, inputs, use_v2)
    if not inputs.schedule:
        return ServingEngine(choice.vllm_version, platform, choice.runner, choice.reason)
    drop = schedule_drop(choice.vllm_version, choice.runner, inputs.method, inputs.data_parallel)
    downgrade = None if drop else schedule_cudagraph_downgrade(choice.runner, platform, inputs.cudagraph_mode)
    return ServingEngine(choice.vllm_version, platform, choice.runner, choice.reason, drop, downgrade)


def tuned_for(record: Mapping[str, Any]) -> dict[str, str]:
    """NIM_TUNED_FOR's value (config.tuned_for): the engine of the server that measured the recommendation."""
    device = record.get("device") or {}
    name = device["gpus"][0]["name"] if device.get("gpus") else device.get("cpu")
    return {
        "vllm": str(record["vllm_version"]),
        "runner": str(record["runner"]),
        "platform": str(record["platform"]),
        **({"device": name} if name and name != "unknown" else {}),
    }
