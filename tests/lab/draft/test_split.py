"""The split rule: reproducible from the seed, independent of line order, a repeated prompt on one side."""

from __future__ import annotations

import json

import pytest

from nim_specdec.errors import ConfigError
from nim_specdec_lab.draft.capture_input import parse_draft_capture
from nim_specdec_lab.draft.split import position, split


def capture(n: int, repeat_first: int = 0) -> list[str]:
    payloads = [{"messages": [{"role": "user", "content": f"question {i}"}], "temperature": 1.0} for i in range(n)]
    payloads += [payloads[0]] * repeat_first
    return [json.dumps({"timestamp": i, "payload": p}) for i, p in enumerate(payloads)]


def ids(requests) -> list[str]:
    return [r.id for r in requests]


def test_same_seed_same_split_and_line_order_does_not_matter():
    lines = capture(200)
    a = split(parse_draft_capture(lines).requests, seed=7, fraction=0.2)
    b = split(parse_draft_capture(list(reversed(lines))).requests, seed=7, fraction=0.2)
    assert sorted(ids(a.held_out)) == sorted(ids(b.held_out))
    assert set(ids(a.train)).isdisjoint(ids(a.held_out)) and len(a.train) + len(a.held_out) == 200


def test_another_seed_another_split_of_about_the_asked_share():
    requests = parse_draft_capture(capture(400)).requests
    a, b = split(requests, 1, 0.25), split(requests, 2, 0.25)
    assert ids(a.held_out) != ids(b.held_out)
    for part in (a, b):
        assert 60 <= len(part.held_out) <= 140  # 100 expected; a binomial's 5 standard deviations either way


def test_the_rule_is_the_documented_hash():
    import hashlib

    digest = hashlib.sha256(b"3:abc").digest()
    assert position("abc", 3) == int.from_bytes(digest[:8], "big") / 2**64


def test_a_repeated_prompt_is_one_request():
    parsed = parse_draft_capture(capture(30, repeat_first=5))
    assert len(parsed.requests) == 30 and parsed.duplicates == 5


@pytest.mark.parametrize("fraction", [0.0, 1.0, -0.1, 2.0])
def test_fraction_outside_0_1_is_refused(fraction):
    with pytest.raises(ConfigError, match="--held-out"):
        split(parse_draft_capture(capture(30)).requests, 0, fraction)


def test_a_side_left_too_small_is_refused():
    with pytest.raises(ConfigError, match="held-out requests"):
        split(parse_draft_capture(capture(20)).requests, 0, 0.001)
