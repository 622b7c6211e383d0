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
from typing import Sequence

from nim_specdec.plan.plan_facts import Facts, SourceFacts
from nim_specdec.plan.plan_model import Plan
from nim_specdec.plan.plan_sections import settled
from nim_specdec.config.settings import Settings
from nim_specdec.config.sources import SourceRef
from nim_specdec.plan.method.target import TARGET_LINK
from nim_specdec.fetchers.base import FetchContext
from nim_specdec.fetchers.cache import commit_of
from nim_specdec.fetchers.context import fetch_context, shared_trust_warning
from nim_specdec.launch.vllm_check.while_downloading import EarlyCheck, check_while_downloading, with_early_result
from nim_specdec.launch.custom_method import custom_method_note, require_custom_method
from nim_specdec.launch.facts import base_facts, read_config, require_method_package
from nim_specdec.launch.resolve import resolve, resolve_with_facts
from nim_specdec.launch.vllm_check.request import check_request
from nim_specdec.launch.vllm_check.gate import run_check
from nim_specdec.launch.workspace import ensure_workspace, fetch_with_reason, link, refuse_foreign_link
from nim_specdec.capture.launcher import check_writable
from nim_specdec.preflight.shell import with_preflight


@dataclass(frozen=True)
class State:
    settings: Settings
    cli: tuple[str, ...]
    facts: Facts  # the machine and every source looked at so far; the plan is built from these
    plan: Plan
    early: EarlyCheck | None = None  # vLLM's verdict given while the weights downloaded
    local: tuple[tuple[str, Path], ...] = ()  # (workspace name, fetched directory) to link


@dataclass(frozen=True)
class Steps:
    log: logging.Logger
    ctx: FetchContext
    for_serve: bool  # vLLM will run in this Python: its method's package must import, and the check is deferred

    def resolve(self, settings: Settings, cli: Sequence[str]) -> State:
        plan, facts = resolve_with_facts(settings, cli, base_facts(settings))
        custom = plan.speculative.custom_method
        plugins = require_custom_method(custom, settings.environ, facts.vllm_version, facts.vllm.methods)
        if plugins:
            self.log.warning(custom_method_note(custom, plugins))
        if self.for_serve and plan.speculative.enabled:
            require_method_package(plan.speculative.method, vllm_version=facts.vllm_version)
        for warning in plan.warnings:
            self.log.warning(warning)
        unwritable = check_writable(settings.capture)
        if unwritable:  # capture stays off; serving goes on
            self.log.warning(unwritable)
            settings = replace(settings, capture=None)
            plan, facts = resolve_with_facts(settings, cli, facts)
        return State(settings, tuple(cli), facts, plan)

    def folders(self, state: State) -> State:
        """A workspace already there that another user owns or can write is refused now, before vLLM's check,
        when the plan links into it, and so is what stands where a local draft is linked (`link` checks both
        again when it links, and creates a workspace that is absent)."""
        plan, draft = state.plan, state.plan.draft
        remote_target = plan.target.ref is not None and not plan.target.ref.is_local
        workspace = Path(state.settings.workspace)
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
        plan = with_preflight(state.plan, state.settings, self.log.warning, state.facts.sources)
        plan = replace(plan, vllm_check=self._vllm_check(plan, state.settings, self.log.info))
        if settled(plan.vllm_check):
            return replace(state, plan=plan)

        def replan(known: dict[str, SourceFacts]) -> Plan:
            return resolve(state.settings, state.cli, replace(state.facts, sources={**state.facts.sources, **known}))

        early = check_while_downloading(plan, self.ctx, replan, state.settings, self.log.info)
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
            state.settings, state.cli, replace(state.facts, sources={**state.facts.sources, ref.uri: found})
        )
        return replace(state, facts=facts, plan=plan)

    def link(self, state: State) -> State:
        workspace = Path(state.settings.workspace)
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
            plan = with_preflight(plan, state.settings, self.log.warning, state.facts.sources)
        if state.early is not None and plan.launch.argv == state.early.argv:
            plan = with_early_result(plan, state.early)
        if not settled(plan.vllm_check):
            plan = replace(plan, vllm_check=self._vllm_check(plan, state.settings, self.log.warning))
        return replace(state, plan=plan)

    def _vllm_check(self, plan: Plan, settings: Settings, warn):
        return run_check(check_request(plan), settings.host.secrets, warn=warn, defer=self.for_serve)


def prepare(settings: Settings, cli: Sequence[str], log: logging.Logger, *, for_serve: bool = False) -> Plan:
    """Resolve, check, download, re-check and link: everything serve does before it hands off to vLLM.

    `for_serve`: vLLM will run in this Python, so the method's optional package must import here; and the
    vLLM check that nothing overlaps (no download runs meanwhile) is left to the exec'd process."""
    steps = Steps(log, fetch_context(settings, log.info, log.warning), for_serve)
    vouched = shared_trust_warning(steps.ctx)
    if vouched:
        log.warning(vouched)
    state = steps.resolve(settings, cli)
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
