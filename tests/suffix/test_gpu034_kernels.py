"""The suffix simulator's v034 mode against vLLM 0.34's own GPU suffix speculator kernels (from the 0.34.0 wheel,
in Triton's interpreter: tests/suffix/vllm_suffix_034.py): the same draft at every step of every request, the same
corpus ring after every finished request, so the same counters. Small corpora make the ring wrap and overwrite
documents and the 16-bucket index collide; a small vocabulary makes long and competing matches."""

from __future__ import annotations

import random

import pytest

from vllm_suffix_034 import Speculator, load
from nim_specdec_lab.ngram.corpus import RecordedRequest
from nim_specdec_lab.suffix.sim034 import Model034, Suffix034Params, simulate_suffix_034

pytestmark = pytest.mark.interpreter
MAX_MODEL_LEN = 96


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    return load(tmp_path_factory.mktemp("vllm034-suffix"))


def _records(seed: int, n: int, vocab: int) -> list[RecordedRequest]:
    rng = random.Random(seed)
    phrases = [[rng.randrange(vocab) for _ in range(rng.randint(3, 9))] for _ in range(4)]
    out = []
    for _ in range(n):
        prompt = [rng.randrange(vocab) for _ in range(rng.randint(2, 10))]
        body = [t for _ in range(rng.randint(2, 5)) for t in rng.choice(phrases) + [rng.randrange(vocab)]]
        out.append(RecordedRequest.of(prompt, body[:30], [rng.randrange(vocab) for _ in range(4)]))
    return out


class Both:
    """Steps the kernels and the model side by side; every draft and every ingest must agree."""

    def __init__(self, kernels, params: Suffix034Params):
        corpus = params.corpus_tokens if params.max_cached_requests else 0
        self.vllm = Speculator(kernels, params.k, params.max_tree_depth, corpus, MAX_MODEL_LEN)
        self.model = Model034(params)
        self.steps = 0

    def propose(self, row):
        theirs, ours = self.vllm.propose(list(row)), self.model.propose(list(row))
        assert ours == theirs, (row, ours, theirs)
        self.steps += 1
        return ours

    def ingest(self, row, prompt_len):
        self.vllm.ingest(list(row), prompt_len)
        self.model.ingest(list(row), prompt_len)
        if self.model.corpus is not None:
            assert self.vllm.corpus.tolist() == self.model.corpus.tokens
            assert self.vllm.table.view(-1, 8).tolist() == self.model.corpus.table


def _counters(result) -> tuple:
    return (result.drafts, result.draft_tokens, result.accepted, result.accepted_per_pos, result.steps)


@pytest.mark.parametrize(
    "seed, params",
    [
        (1, Suffix034Params(k=3, max_tree_depth=24, corpus_tokens=64)),  # the ring wraps, documents are overwritten
        (2, Suffix034Params(k=4, max_tree_depth=6, corpus_tokens=4096)),
        (3, Suffix034Params(k=2, max_tree_depth=24, corpus_tokens=0)),  # the request's own history only
        (4, Suffix034Params(k=3, max_tree_depth=1, corpus_tokens=4096)),  # depth 1: no corpus
    ],
)
def test_every_draft_and_the_corpus_are_vllms(kernels, seed, params):
    records = _records(seed, 6, vocab=5)
    both = Both(kernels, params)
    predicted = simulate_suffix_034(records, params, drafter=both)
    assert both.steps > 20
    alone = simulate_suffix_034(records, params)  # the model alone gives the same counters
    assert _counters(alone) == _counters(predicted) and (alone.per_request == predicted.per_request).all()
    assert predicted.model_runner == "v2"
    assert predicted.draft_tokens == predicted.drafts * params.k  # fixed-length drafts
    assert 0 < predicted.accepted < predicted.draft_tokens
