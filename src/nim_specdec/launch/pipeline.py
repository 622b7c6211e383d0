"""What `prepare` and `serve` do before vLLM starts: one pipeline of named steps over one state.

    resolve -> folders -> local facts -> fetch target -> refine -> fetch draft -> refine -> link -> final check

(`serve` then hands off: launch/handoff.py). Each step takes the state and returns a new one; the plan in it
is a new immutable value after every step. One rule decides when the plan is built again: whenever what is
known about a source changes (its files arrived, or a branch was fetched at another commit than the one
cached), `refine` resolves with the new facts. A rebuilt plan has no pre-flight or vLLM-check result yet,
so the final check runs exactly those the last resolution left unset.

Cheap checks come first: everything that needs no vLLM import (the folders and their owners, the sources
and their files, the pre-flight) is refused in milliseconds, before vLLM's check costs seconds.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Mapping, Sequence

from nim_specdec.capture.launcher import check_writable
from nim_specdec.config.preflight_modes import PreflightModes
from nim_specdec.config.settings import LogFormat, Settings
from nim_specdec.config.sources import SourceRef
from nim_specdec.engines.protocol.sections import settled
from nim_specdec.engines.vllm.check.gate import run_check
from nim_specdec.engines.vllm.release.vllm_schema import knowledge_for
from nim_specdec.fetchers.context import shared_trust_warning
from nim_specdec.fetchers.download.base import FetchContext
from nim_specdec.fetchers.volume.cache import commit_of
from nim_specdec.launch.check_request import check_request
from nim_specdec.launch.custom_method import custom_method_note, require_custom_method
from nim_specdec.launch.early_check.while_downloading import EarlyCheck, check_while_downloading, with_early_result
from nim_specdec.launch.engine_check import NOT_FOR_SGLANG, checks_with_vllm
from nim_specdec.launch.facts import FactsQuery, base_facts, read_config, require_method_package
from nim_specdec.launch.resolve import resolve_with_facts
from nim_specdec.launch.stage_inputs import facts_query, fetch_context, log_format, planner_input
from nim_specdec.launch.workspace import ensure_workspace, fetch_with_reason, link, refuse_foreign_link
from nim_specdec.plan.method.target import TARGET_LINK
from nim_specdec.plan.plan_facts import Facts, SourceFacts
from nim_specdec.plan.plan_input import PlannerInput
from nim_specdec.plan.plan_model import Plan
from nim_specdec.preflight.shell import with_preflight


@dataclass(frozen=True)
class State:
    given: PlannerInput  # what the plan is built from: the settings', less a capture whose file cannot be written
    cli: tuple[str, ...]
    facts: Facts  # the machine and every source looked at so far; the plan is built from these
    plan: Plan
    early: EarlyCheck | None = None  # vLLM's verdict given while the weights downloaded
    local: tuple[tuple[str, Path], ...] = ()  # (workspace name, fetched directory) to link


@dataclass(frozen=True)
class Steps:
    """What every step is given, each stage's own part of the settings (launch/stage_inputs.py), made once."""

    log: logging.Logger
    ctx: FetchContext  # the fetchers': the cache, the download policy, the backends' credentials
    given: PlannerInput  # the planner's
    machine: FactsQuery  # where the machine's facts are read: the built-in configs, the release, the GPUs
    preflight: PreflightModes
    log_format: LogFormat  # the download child logs as the launcher does; its secrets mask vLLM's words too
    environ: Mapping[str, str]  # where a custom method's plugin is looked for
    for_serve: bool  # vLLM will run in this Python: its method's package must import, and the check is deferred

    def resolve(self, cli: Sequence[str]) -> State:
        given = self.given
        plan, facts = resolve_with_facts(given, cli, base_facts(self.machine), self.ctx)
        custom = plan.speculative.custom_method
        plugins = require_custom_method(
            custom, self.environ, facts.vllm_version, knowledge_for(facts.vllm_version).methods
        )
        if plugins:
            self.log.warning(custom_method_note(custom, plugins))
        if self.for_serve and plan.speculative.enabled:
            require_method_package(plan.speculative.method, vllm_version=facts.vllm_version)
        for warning in plan.warnings:
            self.log.warning(warning)
        unwritable = check_writable(given.capture)
        if unwritable:  # capture stays off; serving goes on
            self.log.warning(unwritable)
            given = replace(given, capture=None)
            plan, facts = resolve_with_facts(given, cli, facts, self.ctx)
        return State(given, tuple(cli), facts, plan)

    def folders(self, state: State) -> State:
        """A workspace already there that another user owns or can write is refused now, before vLLM's check,
        when the plan links into it, and so is what stands where a local draft is linked (`link` checks both
        again when it links, and creates a workspace that is absent)."""
        plan, draft = state.plan, state.plan.draft
        remote_target = plan.target.ref is not None and not plan.target.ref.is_local
        workspace = Path(state.given.locations.workspace)
        named_draft = draft is not None and draft.name is not None
        if not (remote_target or named_draft) or not os.path.lexists(workspace):
            return state
        ensure_workspace(workspace, self.ctx.cache_dir, self.ctx.vouched)
        if named_draft and draft.local_dir is not None:
            refuse_foreign_link(
                workspace / draft.name, os.path.realpath(draft.local_dir), self.ctx.cache_dir, self.ctx.vouched
            )
        return state

    def local_facts(self, state: State) -> State:
        """What is already here is checked before any download; vLLM's check runs now when the files it reads
        are here, else while the weights download (remote sources: their config.json first)."""
        plan = self._preflight(state.plan, state.facts)
        plan = replace(plan, vllm_check=self._vllm_check(plan, self.log.info))
        if settled(plan.vllm_check) or not checks_with_vllm(plan):
            return replace(state, plan=plan)

        def replan(known: dict[str, SourceFacts]) -> Plan:
            facts = replace(state.facts, sources={**state.facts.sources, **known})
            return resolve_with_facts(state.given, state.cli, facts, self.ctx)[0]

        early = check_while_downloading(plan, self.ctx, replan, self.log_format, self.log.info)
        return replace(state, plan=with_early_result(plan, early), early=early)

    def fetch_target(self, state: State) -> State:
        ref = state.plan.target.ref
        if ref is None or ref.is_local:  # vLLM is given the directory itself, or resolves a hub id itself
            return state
        local, reason = fetch_with_reason(ref, self.ctx)
        state = self.refine(state, ref, local, state.plan.target.chosen_by, reason)
        return replace(state, local=(*state.local, (TARGET_LINK, local)))

    def fetch_draft(self, state: State) -> State:
        self.log.info("speculative decoding: %s", state.plan.speculative.reason)
        draft = state.plan.draft
        if draft is None:
            return state
        local, reason = fetch_with_reason(draft.ref, self.ctx)
        state = self.refine(state, draft.ref, local, draft.chosen_by, reason)
        return state if draft.name is None else replace(state, local=(*state.local, (draft.name, local)))

    def refine(self, state: State, ref: SourceRef, local: Path, where: str, reason: str | None = None) -> State:
        """The one rule: new facts about a source (for hf://, the commit and why, too) build the plan again."""
        commit = None if ref.is_local else commit_of(local, self.ctx.trust_shared)
        found = SourceFacts(str(local), read_config(local, where), commit, reason)
        if state.facts.sources.get(ref.uri) == found:
            return state
        plan, facts = resolve_with_facts(
            state.given, state.cli, replace(state.facts, sources={**state.facts.sources, ref.uri: found}), self.ctx
        )
        return replace(state, facts=facts, plan=plan)

    def link(self, state: State) -> State:
        workspace = Path(state.given.locations.workspace)
        for name, local in state.local:
            link(local, workspace / name, self.ctx.cache_dir, self.ctx.vouched)
        draft = state.plan.draft
        if draft is not None and draft.name is not None:
            self.log.info("draft %s materialized at %s", draft.source, draft.path)
        return state

    def final_check(self, state: State) -> State:
        """What the last resolution left unchecked: the pre-flight on the files now here, and vLLM's check
        (the verdict given during the download counts when it judged this very command)."""
        plan = state.plan
        if plan.preflight is None:
            plan = self._preflight(plan, state.facts)
        if state.early is not None and plan.launch.argv == state.early.argv:
            plan = with_early_result(plan, state.early)
        if not settled(plan.vllm_check):
            plan = replace(plan, vllm_check=self._vllm_check(plan, self.log.warning))
        return replace(state, plan=plan)

    def _preflight(self, plan: Plan, facts: Facts) -> Plan:
        devices = self.machine.cuda_visible_devices  # the GPUs the server will see
        return with_preflight(plan, self.preflight, devices, self.log.warning, facts.sources)

    def _vllm_check(self, plan: Plan, warn):
        if not checks_with_vllm(plan):  # another engine's plan: its section says vLLM's check is not used
            return NOT_FOR_SGLANG
        return run_check(check_request(plan), self.log_format.secrets, warn=warn, defer=self.for_serve)


def steps_for(settings: Settings, log: logging.Logger, for_serve: bool = False) -> Steps:
    """The steps of one command, each stage given its part of `settings`; the fetchers log with `log`."""
    return Steps(
        log,
        fetch_context(settings, log.info, log.warning),
        planner_input(settings),
        facts_query(settings),
        settings.preflight,
        log_format(settings),
        settings.environ,
        for_serve,
    )


def prepare(settings: Settings, cli: Sequence[str], log: logging.Logger, *, for_serve: bool = False) -> Plan:
    """Resolve, check, download, re-check and link: everything serve does before it hands off to vLLM.

    `for_serve`: vLLM will run in this Python, so the method's optional package must import here; and the
    vLLM check that nothing overlaps (no download runs meanwhile) is left to the exec'd process."""
    steps = steps_for(settings, log, for_serve)
    vouched = shared_trust_warning(steps.ctx)
    if vouched:
        log.warning(vouched)
    state = steps.resolve(cli)
    for step in (
        steps.folders,
        steps.local_facts,
        steps.fetch_target,
        steps.fetch_draft,
        steps.link,
        steps.final_check,
    ):
        state = step(state)
    return state.plan
