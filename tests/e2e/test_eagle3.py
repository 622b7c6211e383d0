"""The guide's EAGLE3 example on the demo model: a local draft named by the bare name "eagle3_draft".

The draft is random (its acceptance is about 0), so the checks are: materialized in the workspace, loaded
by vLLM as an EAGLE3 drafter fed by the target's auxiliary hidden states, drafting, and the output still
token-for-token the target's own. (vLLM's default auxiliary layers (2, L // 2, L - 3) do not exist in a
2-layer target; the draft's config names (0, 1, 2), otherwise the first drafted step fails in
combine_hidden_states with a shape error.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


def test_eagle3_draft_materialized_and_loaded(eagle3_run, demo_model):
    link = Path(eagle3_run.env["NIM_WORKSPACE"]) / "eagle3_draft"
    assert link.is_symlink() and link.resolve() == (demo_model / "draft-eagle3").resolve(), eagle3_run.context()
    assert f"method='eagle3', model='{link}'" in eagle3_run.log, eagle3_run.context()
    assert "Using auxiliary layers from speculative config: (0, 1, 2)" in eagle3_run.log, eagle3_run.context()


def test_eagle3_drafts(eagle3_run):
    growth = eagle3_run.growth
    assert growth.drafts > 0 and growth.draft_tokens == 3 * growth.drafts, f"{growth}" + eagle3_run.context()
    assert eagle3_run.report_json[eagle3_run.model]["status"] == "active"


def test_eagle3_output_equals_target_alone(eagle3_run, off_run):
    assert eagle3_run.outputs == off_run.outputs
