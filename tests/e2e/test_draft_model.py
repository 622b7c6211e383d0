"""Model-free mode: `--speculative-config {"method": "draft_model", "model": "my_draft", ...}` as a vLLM
argument, NIM_DRAFT_MODEL_PATH a copy of the target (from s3://, see conftest): linked into the workspace
under the bare name, every draft accepted. (A local draft directory is linked the same way: test_eagle3.)"""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


def test_bare_draft_name_is_rewritten_to_the_workspace_link(remote_run):
    link = Path(remote_run.env["NIM_WORKSPACE"]) / "my_draft"
    assert link.is_symlink(), f"{link} is not a link" + remote_run.context()
    # vLLM was given the workspace path, and logged it.
    assert f'"model":"{link}"' in remote_run.log or f"model='{link}'" in remote_run.log, remote_run.context()


def test_copy_of_target_draft_is_always_accepted(remote_run):
    growth = remote_run.growth
    assert growth.drafts > 0, f"{growth}" + remote_run.context()
    # Same weights, greedy sampling: the draft proposes exactly what the target picks, so every drafted
    # token is accepted and each step emits num_speculative_tokens + 1 = 4 tokens.
    assert growth.accepted == growth.draft_tokens, f"{growth}" + remote_run.context()
    assert growth.per_position == (growth.drafts,) * 3
    entry = remote_run.report_json[remote_run.model]
    assert entry["acceptance_rate"] == 1.0 and entry["acceptance_length"] == pytest.approx(
        1 + growth.accepted / growth.drafts
    )


def test_draft_model_output_equals_target_alone(remote_run, off_run):
    assert remote_run.outputs == off_run.outputs
