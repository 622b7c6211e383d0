"""NIM_SPECDEC_ENABLE=0: no drafts, and greedy outputs are the same tokens as with speculation on."""

from __future__ import annotations

import pytest

from nim_specdec.engines.vllm.observe.spec_counters import INACTIVE

pytestmark = pytest.mark.e2e


def test_no_drafts_are_made(off_run):
    growth = off_run.growth
    assert growth.drafts == 0 and growth.draft_tokens == 0, f"{growth}" + off_run.context()
    assert "--speculative-config" not in off_run.log.split("exec:", 1)[-1].split("\n", 1)[0]


def test_report_says_inactive(off_run):
    assert off_run.report_text.startswith(INACTIVE), off_run.report_text
    # `report --json` succeeded: an empty answer means no model exported spec-decode counters at all.
    assert off_run.report_returncode == 0, off_run.report_stderr
    assert all(entry["status"] == INACTIVE for entry in off_run.report_json.values())


def test_output_is_never_degraded(off_run, ngram_run):
    # Greedy decoding: speculation must give exactly the tokens the target alone gives.
    assert off_run.outputs == ngram_run.outputs


def test_smoke_module_passes_without_spec(off_run):
    smoke = off_run.smoke
    assert smoke is not None and smoke.returncode == 0, f"{smoke.stdout}\n{smoke.stderr}"
    assert "speculative decoding inactive" in smoke.stdout
