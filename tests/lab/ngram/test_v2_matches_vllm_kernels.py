"""The V2 drafter model and simulation against vLLM's own V2 n-gram kernels, run in Triton's interpreter.

On a GPU vLLM 0.32 serves method "ngram" through `NgramGPUSpeculator`; its kernels are loaded
from the installed vLLM (see vllm_ngram_v2.py) and called on the CPU. Generated contexts and
requests come from seeded generators: varied k, min, max, model lengths, lengths and vocabularies.
"""

from __future__ import annotations

import random

import pytest
import vllm_ngram_v2 as v2

import strict_json
from nim_specdec_lab.ngram.corpus import RecordedRequest, build_corpus
from nim_specdec_lab.ngram.proposer_v2 import propose_v2, simulate_request_v2
from nim_specdec_lab.ngram.reference import propose
from nim_specdec_lab.ngram.simulator import NgramParams
from nim_specdec_lab.ngram.simulator_v2 import simulate_v2

# Triton must be imported with its interpreter on in the process: these run in a pytest process of their own.
pytestmark = pytest.mark.interpreter

# Records the other n-gram tests simulate (simulate's CLI tests and tune-ngram's edge test).
KNOWN_RECORDS = [
    RecordedRequest.of([1, 2, 3, 4, 1, 2], [3, 4, 1, 2, 3, 4, 1, 2, 3], [4, 1, 2]),
    RecordedRequest.of([9, 8], [5, 6, 7, 5, 6, 7, 5, 6, 7, 5], [6, 7, 5]),
    RecordedRequest.of([9, 9], [5, 6, 7, 5, 6, 7, 5, 6, 7, 5], [6, 7, 5]),
    RecordedRequest.of([1, 2, 3, 4, 1, 2], [3, 4, 1, 2] * 6, [3, 4, 1, 2]),
]


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    return v2.load(tmp_path_factory.mktemp("vllm_ngram_v2"))


def test_the_rewrite_needs_the_expressions_it_replaces():
    source = v2.installed_source()
    assert v2.VECTOR_MASK in v2.rewrite(source) and v2.SCALAR_MASK not in v2.rewrite(source)
    with pytest.raises(AssertionError, match="write_ok"):
        v2.rewrite(source.replace(v2.SCALAR_MASK, "(k_iota < tokens_avail) & k_in_range & write_ok"))
    with pytest.raises(AssertionError, match="triton_utils"):
        v2.rewrite(source.replace(v2.IMPORT_LINE, "import triton\n"))


def test_rightmost_occurrence_and_k_drafts(kernels):
    context = [5, 6, 7, 8, 5, 6, 7, 9, 5, 6, 7]
    drafter = v2.Drafter(kernels, 3, 1, 4, 64, 4)
    # Slot 2 matches only at its end: one token, then the last sampled token. Slot 0 has no match.
    got = drafter.propose([context, [1, 2, 3], [4, 1, 9, 4]], slots=[1, 0, 2])
    assert got == [[9, 5, 6], [3, 3, 3], [1, 9, 4]]
    assert [propose_v2(c, 1, 4, 3) for c in ([5, 6, 7, 8, 5, 6, 7, 9, 5, 6, 7], [1, 2, 3], [4, 1, 9, 4])] == got
    assert propose(context, 1, 4, 3, 64) == [8, 5, 6]  # V1: the earliest occurrence


def test_the_interpreter_shortcut_changes_no_draft(kernels):
    rng = random.Random(7)
    drafter = v2.Drafter(kernels, 4, 1, 3, 64, 12)
    contexts = [[rng.randrange(3) for _ in range(rng.randint(1, 64))] for _ in range(12)]
    assert drafter.propose(contexts, fast=True) == drafter.propose(contexts, fast=False)


def _configs(rng: random.Random, count: int):
    for _ in range(count):
        k = rng.choice([1, 2, 3, 4, 5, 8])
        min_n = rng.randint(1, 4)
        max_n = min_n + rng.randint(0, 3)
        # Model lengths pick vLLM's block sizes 16, 64, 128 and 256 and several blocks per row.
        yield k, min_n, max_n, rng.choice([7, 16, 40, 64, 100, 300, 1100])


def test_proposer_equals_the_kernels_on_generated_contexts(kernels):
    rng = random.Random(2026)
    checked = 0
    for k, min_n, max_n, length in _configs(rng, 40):
        batch = 25
        drafter = v2.Drafter(kernels, k, min_n, max_n, length, batch + 3)
        vocab = rng.choice([1, 2, 3, 4, 6, 50000])
        contexts = [[rng.randrange(vocab) for _ in range(rng.randint(1, min(length, 80)))] for _ in range(batch)]
        # Long contexts reach past the first blocks of a row.
        contexts[0] = [rng.randrange(3) for _ in range(length)]
        slots = rng.sample(range(batch + 3), batch)
        got = drafter.propose(contexts, slots=slots)
        for context, drafts in zip(contexts, got):
            assert propose_v2(context, min_n, max_n, k) == drafts, (context, k, min_n, max_n, length)
        checked += batch
    assert checked >= 1000


def _requests(rng: random.Random, count: int, length: int) -> list[RecordedRequest]:
    vocab = rng.choice([2, 3, 5, 30])
    out = []
    for _ in range(count):
        prompt = [rng.randrange(vocab) for _ in range(rng.randint(1, 20))]
        room = length - len(prompt)
        output = [rng.randrange(vocab) for _ in range(rng.randint(0, min(20, room)))]
        out.append(RecordedRequest.of(prompt, output, [rng.randrange(vocab) for _ in range(rng.randint(0, 9))]))
    return out


def _assert_all_agree(kernels, requests, params: NgramParams, length: int) -> None:
    drafter = v2.Drafter(kernels, params.k, params.min_n, params.max_n, length, len(requests))
    stepped = v2.replay(drafter, requests)
    result = simulate_v2(build_corpus(requests, params.max_n, pad=params.k + 1, occurrence="last"), params, length)
    for index, (req, want) in enumerate(zip(requests, stepped)):
        ref = simulate_request_v2(req.prompt, req.output, req.tail, params.k, params.min_n, params.max_n, length)
        assert (ref.drafts, ref.draft_tokens, ref.accepted, ref.accepted_per_pos, ref.steps) == want, req
        assert tuple(result.per_request[index]) == want[:3], req
    assert (result.drafts, result.draft_tokens, result.accepted) == tuple(sum(s[i] for s in stepped) for i in range(3))
    assert result.accepted_per_pos == tuple(sum(s[3][p] for s in stepped) for p in range(params.k))
    assert result.steps == sum(s[4] for s in stepped)


def test_whole_request_counters_equal_a_replay_through_the_kernels(kernels):
    rng = random.Random(26)
    total = trimmed = 0
    for group, (k, min_n, max_n, _) in enumerate(_configs(rng, 8)):
        # Every other group ends near the model length, where vLLM trims the drafts.
        length = 24 if group % 2 else 64
        requests = _requests(rng, 25, length)
        _assert_all_agree(kernels, requests, NgramParams(k, min_n, max_n), length)
        total += len(requests)
        trimmed += sum(len(r.prompt) + len(r.output) + k > length for r in requests)
    assert total >= 200 and trimmed >= 10


@pytest.mark.parametrize("k,min_n,max_n", [(3, 1, 4), (1, 1, 1), (5, 2, 3), (8, 1, 5)])
def test_known_records_equal_a_replay_through_the_kernels(kernels, k, min_n, max_n):
    _assert_all_agree(kernels, KNOWN_RECORDS, NgramParams(k, min_n, max_n), 64)


def test_serving_runner_v2_reports_the_kernels_counters(kernels, tmp_path):
    """The command users run: `simulate --model-runner v2 --json` over saved records."""
    import subprocess
    import sys

    from nim_specdec_lab.ngram.http_replay import save_records

    requests = KNOWN_RECORDS + _requests(random.Random(5), 12, 60)
    save_records(str(tmp_path / "records.jsonl"), requests, 64)
    report = tmp_path / "report.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "nim_specdec",
            "simulate",
            "--records",
            str(tmp_path / "records.jsonl"),
            "--method",
            "ngram",
            "--ngram-k",
            "2,4",
            "--ngram-min",
            "1",
            "--ngram-max",
            "1,3",
            "--model-runner",
            "v2",
            "--json",
            str(report),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    rows = strict_json.loads(report.read_text())["grid"]
    assert len(rows) == 4
    for row in rows:
        k, min_n, max_n = row["num_speculative_tokens"], row["prompt_lookup_min"], row["prompt_lookup_max"]
        stepped = v2.replay(v2.Drafter(kernels, k, min_n, max_n, 64, len(requests)), requests)
        assert row["model_runner"] == "v2"
        assert (row["drafts"], row["draft_tokens"], row["accepted_tokens"]) == tuple(
            sum(s[i] for s in stepped) for i in range(3)
        )
        assert row["accepted_per_pos"] == [sum(s[3][p] for s in stepped) for p in range(k)]


def test_vllm_schedules_ngram_synchronously():
    """The step loop assumes each step's drafts are sized after the previous step was verified: vLLM's
    config turns asynchronous scheduling off by default for methods outside these lists."""
    import importlib.util
    from pathlib import Path
    from typing import get_args

    from vllm.config.speculative import EagleModelTypes, NgramGPUTypes

    assert "ngram" not in get_args(EagleModelTypes) and "ngram" not in get_args(NgramGPUTypes)
    source = (Path(importlib.util.find_spec("vllm").submodule_search_locations[0]) / "config/vllm.py").read_text()
    assert "self.speculative_config.method not in get_args(NgramGPUTypes)" in source
