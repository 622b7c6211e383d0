"""The lab's model of vLLM 0.34's native suffix speculator against that release's own Triton kernels.

The kernels come from the 0.34 wheel (tests/vllm_release_source.py) and run in Triton's interpreter
(vllm_gpu_speculators.py: only vLLM's import lines are replaced). Compared: every draft and its count of
real tokens, batch by batch with documents finishing between batches; the corpus ring and both hash
tables after each ingestion; and the counters of whole requests sent one at a time.
"""

from __future__ import annotations

import random

import pytest
import torch
import vllm_gpu_speculators as g

from nim_specdec_lab.ngram.corpus import RecordedRequest
from nim_specdec_lab.suffix.gpu_speculator import GpuSuffixParams, GpuSuffixState, local_match
from nim_specdec_lab.suffix.simulator_gpu import simulate_suffix_gpu
from vllm_release_source import source

pytestmark = pytest.mark.interpreter
CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    g.interpreter_masks_as_bool()
    return g.load(source("0.34.0", g.SUFFIX_PATH), tmp_path_factory.mktemp("suffix034"), "vllm_suffix_speculator_034")


def test_the_stand_ins_cover_every_vllm_import():
    text = source("0.34.0", g.SUFFIX_PATH)
    # Imports under TYPE_CHECKING (indented) never run.
    assert not [line for line in g.rewrite(text).splitlines() if line.startswith(("from vllm", "import vllm"))]
    with pytest.raises(AssertionError, match="no stand-in"):
        g.rewrite(text.replace("import torch\n", "import torch\nfrom vllm.platforms import current_platform\n", 1))


@pytest.mark.parametrize(
    "k, depth, corpus, length, vocab, cached",
    [
        (4, 24, 4096, 1100, 3, 10000),  # the default depth, a long model length (block 256)
        (3, 6, 64, 200, 5, 10000),  # a small ring: documents overwrite each other
        (8, 3, 300, 64, 2, 10000),
        (1, 2, 16, 64, 50, 10000),  # a ring shorter than most documents: the newest tokens kept
        (5, 1, 4096, 200, 3, 10000),  # depth 1: no corpus (the 2-token key needs depth 2)
        (3, 6, 4096, 200, 4, 0),  # max_cached_requests 0 turns the corpus off
    ],
)
def test_drafts_equal_the_kernels(kernels, k, depth, corpus, length, vocab, cached):
    rng = random.Random(k * 1000 + depth * 10 + vocab)
    slots = 6
    drafter = g.SuffixDrafter(kernels, k, depth, corpus, length, slots, CPU, max_cached=cached)
    model = GpuSuffixState(GpuSuffixParams(k=k, max_tree_depth=depth, corpus_tokens=corpus, max_cached_requests=cached))
    assert model.params.has_corpus == drafter.speculator.has_corpus
    compared = from_corpus = 0
    for docs, contexts in g.suffix_batches(rng, vocab, length, 6, slots):
        drafter.finish(docs)
        model.ingest([tokens[max(p - 3, 0) :] for _, _, tokens, p in sorted(docs)])
        if model.params.has_corpus:
            assert drafter.speculator.corpus.tolist() == model.corpus
            assert drafter.speculator.table.tolist() == [model.tables[0], model.tables[1]]
        got = drafter.propose(contexts, rng.sample(range(slots), slots))
        for context, (draft, valid) in zip(contexts, got):
            assert (draft, valid) == tuple(model.propose(context, context[-1])), context
            compared += 1
            if model.params.has_corpus and model._corpus_draft(context)[0] > local_match(context, depth)[0]:
                from_corpus += 1
    assert compared == 36
    # The corpus path is exercised where it exists (and cannot be where it does not).
    assert (from_corpus > 0) == model.params.has_corpus


def _records(rng: random.Random, count: int, vocab: int) -> list[RecordedRequest]:
    shared = [rng.randrange(vocab) for _ in range(30)]
    records = []
    for _ in range(count):
        prompt = [rng.randrange(vocab) for _ in range(rng.randint(2, 12))]
        # Responses repeat spans of each other, as answers to similar prompts do.
        output = [t for _ in range(3) for t in shared[rng.randrange(20) :][: rng.randint(2, 8)]] + [
            rng.randrange(vocab) for _ in range(rng.randint(1, 6))
        ]
        records.append(RecordedRequest.of(prompt, output, [rng.randrange(vocab) for _ in range(8)]))
    return records


@pytest.mark.parametrize("k, depth, corpus, length", [(3, 24, 4096, 1100), (5, 4, 128, 48)])
def test_request_counters_equal_the_kernels(kernels, k, depth, corpus, length):
    rng = random.Random(k + depth)
    records = _records(rng, 10, 40)
    drafter = g.SuffixDrafter(kernels, k, depth, corpus, length, 1, CPU)
    expected = g.kernel_replay(drafter, records, length)
    got = simulate_suffix_gpu(records, GpuSuffixParams(k=k, max_tree_depth=depth, corpus_tokens=corpus), length)
    assert [tuple(int(x) for x in row) for row in got.per_request] == expected
    assert got.accepted > 0 and got.model_runner == "v2"
    # Always k drafts: every step after the prefill verifies k tokens unless the model length cuts them.
    assert got.draft_tokens == got.drafts * k or length < 1100
