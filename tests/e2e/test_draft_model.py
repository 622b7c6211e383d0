"""Model-free mode: `--speculative-config {"method": "draft_model", "model": "my_draft", ...}` as a vLLM
argument, NIM_DRAFT_MODEL_PATH a local copy of the target: linked into the workspace, every draft accepted."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


def test_draft_is_materialized_in_the_workspace(draft_run, demo_model):
    link = Path(draft_run.env["NIM_WORKSPACE"]) / "my_draft"
    assert link.is_symlink(), f"{link} is not a link" + draft_run.context()
    assert link.resolve() == (demo_model / "draft-copy").resolve()
    # The bare name was rewritten: vLLM was given the workspace path, and logged it.
    assert f'"model":"{link}"' in draft_run.log or f"model='{link}'" in draft_run.log, draft_run.context()


def test_copy_of_target_draft_is_always_accepted(draft_run):
    growth = draft_run.growth
    assert growth.drafts > 0, f"{growth}" + draft_run.context()
    # Same weights, greedy sampling: the draft proposes exactly what the target picks, so every drafted
    # token is accepted and each step emits num_speculative_tokens + 1 = 4 tokens.
    assert growth.accepted == growth.draft_tokens, f"{growth}" + draft_run.context()
    assert growth.per_position == (growth.drafts,) * 3
    entry = draft_run.report_json[draft_run.model]
    assert entry["acceptance_rate"] == 1.0 and entry["acceptance_length"] == pytest.approx(1 + growth.accepted / growth.drafts)


def test_draft_model_output_equals_target_alone(draft_run, off_run):
    assert draft_run.outputs == off_run.outputs
