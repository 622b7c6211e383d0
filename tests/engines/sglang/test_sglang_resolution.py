"""The pure side of SGLang's resolution as a check: the argv it resolves, its answer read (hostile answers
refused), its platform refusals told apart, and every value it would change silently listed."""

from __future__ import annotations

import json

import pytest

from nim_specdec.engines.sglang.resolution import (
    Resolution,
    check_argv,
    parse_resolutions,
    platform_refusal,
    silent_changes,
)
from nim_specdec.errors import ConfigError


@pytest.mark.parametrize(
    ("argv", "checked"),
    [
        (["--model-path", "/m"], ("--model-path", "/m", "--device", "cpu")),
        (["--device", "cuda", "--tp", "2"], ("--tp", "2", "--device", "cpu")),
        (["--device=npu"], ("--device", "cpu")),
    ],
)
def test_the_check_resolves_for_the_cpu(argv, checked):
    assert check_argv(argv) == checked


def test_where_sglang_has_its_own_platform_the_device_is_left_as_given():
    assert check_argv(["--device", "cuda", "--tp", "2"], device=None) == ("--device", "cuda", "--tp", "2")


ACCEPTED = {
    "ok": True,
    "served": {"speculative_num_draft_tokens": 4},
    "changed_by": {"speculative_num_draft_tokens": "h"},
}


def test_an_answer_is_read_entry_by_entry():
    answer = json.dumps([ACCEPTED, {"ok": False, "refusal": "ValueError: no\x1b[2J"}])
    first, second = parse_resolutions(answer, 2)
    assert first == Resolution(True, {"speculative_num_draft_tokens": 4}, {"speculative_num_draft_tokens": "h"})
    assert not second.ok and second.refusal == "ValueError: no\\x1b[2J"


@pytest.mark.parametrize(
    "answer",
    ["", "not json", "{}", json.dumps([ACCEPTED]), json.dumps([ACCEPTED, 3]), json.dumps([ACCEPTED, {"ok": True}])],
)
def test_a_malformed_answer_is_refused_in_one_line(answer):
    with pytest.raises(ConfigError) as caught:
        parse_resolutions(answer, 2)
    assert str(caught.value).startswith("SGLang's resolver: unreadable answer")


@pytest.mark.parametrize(
    ("refusal", "platform"),
    [
        ("ValueError: DSpark speculative decoding only supports CUDA, NPU or XPU device.", True),
        ("AssertionError: Torch not compiled with CUDA enabled", True),
        ("AssertionError: extra_buffer requires platform support for Mamba cache state snapshots.", True),
        ("ValueError: Unknown quantization method: mxfp4. Must be one of [...]", True),
        ("ValueError: DFLASH speculative decoding requires setting --speculative-draft-model-path.", False),
        ("sglang serve: error: argument --speculative-num-steps: invalid int value: 'x'", False),
    ],
)
def test_platform_refusals_are_told_apart(refusal, platform):
    assert platform_refusal(Resolution(False, refusal=refusal)) is platform


SERVED = {
    "speculative_algorithm": "EAGLE3",
    "speculative_num_steps": 3,
    "speculative_eagle_topk": 1,
    "speculative_num_draft_tokens": 4,
    "speculative_adaptive": False,
    "speculative_draft_model_path": "/d",
    "max_running_requests": 48,
    "speculative_draft_model_revision": "main",
}
BY = {
    "speculative_num_draft_tokens": "_handle_eagle_family",
    "max_running_requests": "_handle_eagle_family",
    "speculative_adaptive": "_maybe_disable_adaptive",
    "speculative_draft_model_revision": "handle_speculative_decoding",
}


def test_every_value_changed_or_filled_is_listed_with_asked_and_served():
    asked = {
        "speculative_algorithm": "EAGLE3",
        "speculative_num_steps": "3",
        "speculative_eagle_topk": "1",
        "speculative_num_draft_tokens": "9",
        "speculative_adaptive": None,
        "speculative_draft_model_path": "/d",
    }
    lines = [change.line() for change in silent_changes(asked, Resolution(True, SERVED, BY))]
    assert lines == [
        "--speculative-num-draft-tokens: asked 9, SGLang 0.5 serves 4 (its _handle_eagle_family)",
        "--speculative-adaptive: asked on, SGLang 0.5 serves off (its _maybe_disable_adaptive)",
        "--max-running-requests: asked unset, SGLang 0.5 serves 48 (its _handle_eagle_family)",
    ]


def test_nothing_listed_when_sglang_serves_what_was_asked():
    asked = {k: str(v) for k, v in SERVED.items() if k.startswith("speculative_") and k != "speculative_adaptive"}
    asked["max_running_requests"] = "48"
    assert silent_changes(asked, Resolution(True, SERVED, BY)) == ()


def test_nextn_served_as_eagle_is_not_a_change():
    served = {**SERVED, "speculative_algorithm": "EAGLE"}
    assert silent_changes({"speculative_algorithm": "NEXTN"}, Resolution(True, served, {})) == ()
