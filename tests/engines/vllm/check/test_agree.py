"""Differential test: the launcher against the installed vLLM's own parser and config validation.

A *late failure* is a case the launcher's fast path accepts and vLLM then refuses: the pod would
download, start and die. Each must be one of the kinds that docs/configuration.md leaves to the vLLM check `serve` runs
before anything slow, and that check must refuse it (exit 2, vLLM's reason). A *false refusal* is a case
vLLM accepts and the launcher refuses: each must be a deliberate difference listed in docs/configuration.md.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from nim_specdec.engines.vllm.check.judge import check_plan
from nim_specdec.errors import ConfigError
from nim_specdec.text.redact import secret_values

DOC = Path(__file__).resolve().parents[4] / "docs" / "configuration.md"

# Fast-path late failures the launcher leaves to the vLLM check (docs/configuration.md: "Left to the vLLM check").
LEFT_TO_VLLM = {
    "platform": r"Unsupported speculative method|are not supported for now|Model Runner V\d does not support|Arctic Inference",  # noqa: E501
    "draft-files": r"greater than the derived max_model_len|cannot be larger than|vocab_size|must be divisible by n_predict",  # noqa: E501
    "draft-load-config": r"^draft_load_config\.",
    # vLLM 0.33 reads --kv-cache-dtype as any string (platform backends add their own); its CacheConfig refuses it
    "engine-arguments": r"^argument --|^unrecognized arguments|^max_num_seqs|^max_num_batched_tokens|^cache_dtype: ",
}
# False refusals kept on purpose (docs/configuration.md: "Deliberate differences").
DELIBERATE = {
    "internal-keys": r"vLLM sets it itself",
    "specdec-args-string-null": r"^NIM_SPECDEC_ARGS \(speculative_config string\): expected a JSON object",
    "schedule-k-above-max": r"num_speculative_tokens_per_batch_size entry .* > num_speculative_tokens",
    "schedule-empty": r"num_speculative_tokens_per_batch_size = \[\] is not a non-empty list",
}


def _kind(table: dict[str, str], text: str) -> str | None:
    return next((kind for kind, pattern in table.items() if re.search(pattern, text)), None)


def test_corpus_is_large_and_mixed(outcomes):
    accepted = sum(o.refusal is None for o in outcomes)
    vllm_ok = sum(o.direct.ok for o in outcomes)
    assert len(outcomes) >= 600
    assert 0.2 < accepted / len(outcomes) < 0.9 and 0.2 < vllm_ok / len(outcomes) < 0.9


def test_every_late_failure_is_a_documented_kind(outcomes):
    undocumented = [
        (o.case.id, o.executed.reason[:200])
        for o in outcomes
        if o.late_failure and _kind(LEFT_TO_VLLM, o.executed.reason) is None
    ]
    assert undocumented == []


def test_the_vllm_check_refuses_every_late_failure_with_its_origin(outcomes):
    late = [o for o in outcomes if o.late_failure]
    assert late, "the corpus should contain configurations only vLLM can refuse"
    for outcome in late:
        with pytest.raises(ConfigError) as caught:
            check_plan(outcome.plan, secret_values(outcome.case.env), outcome.case.draft_map)
        line = caught.value.one_line()
        assert caught.value.exit_code == 2
        assert "refuses this configuration" in line and outcome.executed.reason[:40] in line, (outcome.case.id, line)


def test_the_vllm_check_accepts_what_vllm_accepts(outcomes):
    accepted = [o for o in outcomes if o.refusal is None and o.executed.ok][:40]
    for outcome in accepted:
        check_plan(outcome.plan, secret_values(outcome.case.env), outcome.case.draft_map)


def test_every_false_refusal_is_a_deliberate_difference(outcomes):
    undocumented = [
        (o.case.id, o.refusal) for o in outcomes if o.false_refusal and _kind(DELIBERATE, o.refusal) is None
    ]
    assert undocumented == []


def test_meaning_is_preserved(outcomes):
    changed = [(o.case.id, o.executed.spec, o.direct.spec) for o in outcomes if o.meaning_changed]
    assert changed == []


def test_refusals_are_configuration_errors(outcomes):
    assert {o.exit_code for o in outcomes if o.refusal is not None} <= {2}


@pytest.mark.parametrize(
    "table,heading", [(LEFT_TO_VLLM, "Left to the vLLM check"), (DELIBERATE, "Deliberate differences")]
)
def test_documented_kinds_are_in_readme_and_still_occur(outcomes, table, heading):
    text = DOC.read_text()
    assert heading in text
    seen = {
        _kind(table, o.executed.reason if table is LEFT_TO_VLLM else o.refusal)
        for o in outcomes
        if (o.late_failure if table is LEFT_TO_VLLM else o.false_refusal)
    }
    for kind in table:
        assert f"`{kind}`" in text, kind
        # platform-dependent kinds may not occur on every machine; deliberate refusals always do
        assert table is LEFT_TO_VLLM or kind in seen, (
            f"{kind} no longer occurs: drop it from the table and docs/configuration.md"
        )
