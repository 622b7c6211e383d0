"""The command a plan asks vLLM's own check to judge: its unredacted command, where the target's and the draft's
files are now, and where each key came from (the check itself is engines/vllm/check/)."""

from __future__ import annotations

from nim_specdec.engines.vllm.check.request import CheckRequest, ModelFiles
from nim_specdec.plan.plan_model import Plan


def check_request(plan: Plan) -> CheckRequest:
    target, draft = plan.target, plan.draft
    return CheckRequest(
        argv=plan.launch.argv,
        target=ModelFiles(target.model, target.local_dir, target.source),
        draft=None if draft is None else ModelFiles(draft.path, draft.local_dir, draft.source),
        spec_origin=dict(plan.speculative.origin),
        engine_origin=dict(plan.engine_origin),
        vllm_version=plan.vllm_version or (plan.engine.vllm_version if plan.engine else None) or "",
    )
