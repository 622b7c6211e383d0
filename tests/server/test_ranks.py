"""Which node does what in a multi-node launch, as /v1/metadata reports it (table-driven)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from nim_specdec.server.ranks import parallel_of, ranks_document


def _nodes(doc):
    return [(n["role"], n["global_ranks"], n["pipeline_stages"], n["drafts"]) for n in doc["nodes"]]


@pytest.mark.parametrize(
    "nnodes, tp, pp, method, expected",
    [
        # Tensor parallel across 2 nodes: one rank each, every rank runs the proposer.
        (2, 2, 1, "ngram", [("leader", [0], [0], True), ("worker", [1], [0], True)]),
        # The manifest's layout: TP 8 inside a node, PP 2 across nodes: drafts on the last stage's node.
        (2, 8, 2, "eagle3", [("leader", list(range(8)), [0], False), ("worker", list(range(8, 16)), [1], True)]),
        (
            4,
            4,
            2,
            "ngram",
            [
                ("leader", [0, 1], [0], False),
                ("worker", [2, 3], [0], False),
                ("worker", [4, 5], [1], True),
                ("worker", [6, 7], [1], True),
            ],
        ),
        (2, 2, 1, None, [("leader", [0], [0], False), ("worker", [1], [0], False)]),  # speculation off
        (1, 2, 1, "ngram", [("leader", [0, 1], [0], True)]),  # one node
    ],
)
def test_roles_ranks_stages_and_drafting(nnodes, tp, pp, method, expected):
    doc = ranks_document(nnodes, tp, pp, method)
    assert _nodes(doc) == expected
    assert [n["serves_http"] for n in doc["nodes"]] == [True] + [False] * (nnodes - 1)


def test_parallel_config_read_from_vllm_config_or_none():
    config = SimpleNamespace(
        parallel_config=SimpleNamespace(nnodes=2, tensor_parallel_size=2, pipeline_parallel_size=1)
    )
    assert parallel_of(config) == (2, 2, 1)
    assert parallel_of(None) is None
    assert parallel_of(SimpleNamespace(parallel_config=SimpleNamespace(nnodes="x"))) is None
