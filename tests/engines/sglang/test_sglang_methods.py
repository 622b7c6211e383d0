"""SGLang's method table: each vLLM-form method's algorithm, draft and K; a method SGLang lacks refused."""

from __future__ import annotations

import pytest

from nim_specdec.engines.sglang.methods import (
    DRAFT_CHECKPOINT,
    DRAFT_NONE,
    DRAFT_TARGET,
    METHODS,
    k_flags,
    method_row,
    same_algorithm,
)
from nim_specdec.errors import ConfigError

ROWS = [
    ("eagle3", "EAGLE3", DRAFT_CHECKPOINT, True),
    ("eagle", "EAGLE", DRAFT_CHECKPOINT, True),
    ("mtp", "EAGLE", DRAFT_TARGET, True),
    ("ngram", "NGRAM", DRAFT_NONE, True),
    ("draft_model", "STANDALONE", DRAFT_CHECKPOINT, True),
    ("dflash", "DFLASH", DRAFT_CHECKPOINT, False),
    ("dspark", "DSPARK", DRAFT_CHECKPOINT, False),
]


@pytest.mark.parametrize(("method", "algorithm", "draft", "cpu"), ROWS)
def test_each_method_has_its_row(method, algorithm, draft, cpu):
    row = method_row(method)
    assert (row.algorithm, row.draft, row.cpu) == (algorithm, draft, cpu)


def test_the_table_is_exactly_these_rows():
    assert [row.method for row in METHODS] == [r[0] for r in ROWS]


@pytest.mark.parametrize("method", ["suffix", "medusa", "mlp_speculator", "extract_hidden_states", "EAGLE3", None, 3])
def test_a_method_sglang_lacks_is_refused_in_one_line(method):
    with pytest.raises(ConfigError) as caught:
        method_row(method)
    text = str(caught.value)
    assert text.startswith("speculative_config.method: ") and repr(method) in text
    assert "use one of: eagle3, eagle, mtp, ngram, draft_model, dflash, dspark, or NIM_ENGINE=vllm" in text
    assert "\n" not in text


@pytest.mark.parametrize(
    ("method", "k", "flags"),
    [
        (
            "eagle3",
            3,
            {"--speculative-num-steps": "3", "--speculative-eagle-topk": "1", "--speculative-num-draft-tokens": "4"},
        ),
        (
            "mtp",
            1,
            {"--speculative-num-steps": "1", "--speculative-eagle-topk": "1", "--speculative-num-draft-tokens": "2"},
        ),
        (
            "draft_model",
            5,
            {"--speculative-num-steps": "5", "--speculative-eagle-topk": "1", "--speculative-num-draft-tokens": "6"},
        ),
        ("dflash", 15, {"--speculative-num-draft-tokens": "16"}),
        ("dspark", 7, {"--speculative-dspark-block-size": "7"}),
        (
            "ngram",
            3,
            {
                "--speculative-num-draft-tokens": "4",
                "--speculative-ngram-min-bfs-breadth": "1",
                "--speculative-ngram-max-bfs-breadth": "1",
            },
        ),
    ],
)
def test_k_becomes_the_algorithms_own_flags(method, k, flags):
    assert dict(k_flags(method_row(method), k)) == flags


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [("NEXTN", "EAGLE", True), ("nextn", "eagle", True), ("EAGLE3", "eagle3", True), ("EAGLE3", "EAGLE", False)],
)
def test_nextn_is_eagle_for_sglang(a, b, same):
    assert same_algorithm(a, b) is same
