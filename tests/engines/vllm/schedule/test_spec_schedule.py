"""num_speculative_tokens_per_batch_size: refused and accepted exactly where vLLM's own check does, shown in
the plan, and allowed in built-in configs."""

from __future__ import annotations

import pytest

from core_fixtures import LLAMA, facts, validate_spec_config, write_model
from nim_specdec.engines.vllm.schedule.spec_schedule import (
    ScheduleRow,
    describe_schedule,
    k_at,
    validate_batch_size_schedule,
)
from nim_specdec.errors import ConfigError
from nim_specdec.launch.resolve import plan_for
from nim_specdec.plan.method.builtin import entry_from_json
from nim_specdec.plan.plan_facts import Facts

# (id, schedule, accepted by vLLM's rules); every case also runs through vLLM's own function below.
CASES = [
    ("one-range", [[1, 256, 3]], True),
    ("mixed", [[1, 2, 3], [3, 256, 0]], True),
    ("gap-carries-forward", [[1, 4, 3], [16, 64, 1]], True),
    ("unsorted-is-sorted-by-vllm", [[5, 8, 0], [1, 4, 2]], True),
    ("tuples", [(1, 4, 2)], True),
    ("lax-numbers", [[1, 4.0, "2"]], True),
    ("single-batch-size", [[1, 1, 3], [2, 2, 1]], True),
    ("empty", [], False),
    ("not-a-list", {"1": 3}, False),
    ("starts-at-2", [[2, 8, 3]], False),
    ("zero-start", [[0, 8, 3]], False),
    ("negative-end", [[1, -1, 3]], False),
    ("start-after-end", [[1, 8, 3], [12, 9, 1]], False),
    ("negative-k", [[1, 8, -1]], False),
    ("overlap", [[1, 8, 3], [8, 16, 1]], False),
    ("two-items", [[1, 8]], False),
    ("four-items", [[1, 8, 3, 0]], False),
    ("fractional", [[1, 8.5, 3]], False),
    ("word", [[1, "many", 3]], False),
    ("entry-not-a-list", [3], False),
]


def _vllm_accepts(schedule) -> bool:
    from pydantic import TypeAdapter, ValidationError  # noqa: PLC0415
    from vllm.v1.spec_decode.dynamic.utils import validate_and_normalize_dynamic_sd_schedule  # noqa: PLC0415

    try:
        # vLLM's config field type first (pydantic, lax), then the scheduler's check.
        typed = TypeAdapter(list[tuple[int, int, int]]).validate_python(schedule)
        validate_and_normalize_dynamic_sd_schedule([list(entry) for entry in typed])
    except (ValidationError, ValueError):
        return False
    return True


@pytest.mark.parametrize("case_id,schedule,accepted", CASES, ids=[c[0] for c in CASES])
def test_validation_agrees_with_vllm(case_id, schedule, accepted):
    assert _vllm_accepts(schedule) is accepted
    if accepted:
        assert validate_batch_size_schedule(schedule, None, "X")[0][0] == 1
    else:
        with pytest.raises(ConfigError) as err:
            validate_batch_size_schedule(schedule, None, "NIM_SPECDEC_ARGS")
        assert err.value.one_line().startswith(
            "NIM_SPECDEC_ARGS: speculative_config.num_speculative_tokens_per_batch_size"
        )


def test_k_above_num_speculative_tokens_is_refused_with_the_fix():
    with pytest.raises(ConfigError) as err:
        validate_spec_config(
            {
                "method": "ngram",
                "num_speculative_tokens": 2,
                "num_speculative_tokens_per_batch_size": [[1, 4, 3], [5, 256, 0]],
            },
            "cfg",
        )
    assert "K = 3 > num_speculative_tokens (2)" in str(err.value) and "raise num_speculative_tokens to 3" in str(
        err.value
    )


def test_suffix_caps_k_at_its_tree_depth_when_num_speculative_tokens_is_unset():
    config = {
        "method": "suffix",
        "suffix_decoding_max_tree_depth": 4,
        "num_speculative_tokens_per_batch_size": [[1, 2, 5]],
    }
    with pytest.raises(ConfigError, match="K = 5 > num_speculative_tokens"):
        validate_spec_config(config, "cfg")
    validate_spec_config({**config, "num_speculative_tokens_per_batch_size": [[1, 2, 4]]}, "cfg")


K_CASES = [
    ([(1, 2, 3), (3, 256, 0)], {1: 3, 2: 3, 3: 0, 300: 0}),
    ([(1, 4, 3), (16, 64, 1)], {4: 3, 5: 3, 15: 3, 16: 1, 64: 1, 65: 1}),
]


@pytest.mark.parametrize("schedule,expected", K_CASES)
def test_k_at_matches_vllms_dense_lookup(schedule, expected):
    from vllm.v1.spec_decode.dynamic.utils import build_dynamic_sd_schedule_lookup  # noqa: PLC0415

    dense = build_dynamic_sd_schedule_lookup(
        [list(e) for e in schedule], vllm_max_batch_size=300, vllm_num_speculative_tokens=8
    )
    for batch_size, k in expected.items():
        assert k_at(schedule, batch_size) == k == dense[batch_size]


def test_describe_reaches_each_range_up_to_the_next():
    assert describe_schedule(((1, 2, 3), (5, 8, 1), (9, 16, 0))) == [
        ScheduleRow("1-4", 3),
        ScheduleRow("5-8", 1),
        ScheduleRow("9+", 0),
    ]


SPEC = '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "num_speculative_tokens_per_batch_size": %s}'  # noqa: E501


def test_plan_shows_the_schedule(tmp_path):
    env = {
        "NIM_MODEL_PATH": str(write_model(tmp_path / "m", LLAMA)),
        "NIM_CACHE_PATH": str(tmp_path / "c"),
        "NIM_SPECDEC_ENABLE": "1",
        "NIM_SPECDEC_ARGS": '{"speculative_config": %s}' % (SPEC % "[[1, 2, 3], [3, 256, 0]]"),
    }
    _, plan = plan_for(env, [], facts())
    assert plan.speculative.batch_size_schedule == [ScheduleRow("1-2", 3), ScheduleRow("3+", 0)]
    assert plan.speculative.config["num_speculative_tokens_per_batch_size"] == [[1, 2, 3], [3, 256, 0]]


def test_plan_refuses_a_bad_schedule_naming_its_source(tmp_path):
    env = {
        "NIM_MODEL_PATH": str(write_model(tmp_path / "m", LLAMA)),
        "NIM_CACHE_PATH": str(tmp_path / "c"),
        "NIM_SPECDEC_ENABLE": "1",
    }
    with pytest.raises(ConfigError) as err:
        plan_for(env, ["--speculative-config", SPEC % "[[2, 256, 3]]"], facts())
    assert "(merged from cli)" in str(err.value) and "not 1" in str(err.value)


def test_a_builtin_config_may_carry_a_schedule(tmp_path):
    entry = entry_from_json(
        {
            "model_id": "org/Tiny",
            "aliases": [],
            "source": "hf://org/Tiny",
            "speculative_config": {
                "method": "ngram",
                "num_speculative_tokens": 3,
                "prompt_lookup_max": 4,
                "num_speculative_tokens_per_batch_size": [[1, 8, 3], [9, 256, 0]],
            },
        },
        "tiny.json",
    )
    validate_spec_config(entry.speculative_config, entry.file)
    env = {"NIM_MODEL_NAME": "org/Tiny", "NIM_CACHE_PATH": str(tmp_path / "c"), "NIM_SPECDEC_ENABLE": "1"}
    _, plan = plan_for(env, [], Facts(registry=(entry,), flavor="vllm", python="python3"))
    assert plan.speculative.batch_size_schedule == [ScheduleRow("1-8", 3), ScheduleRow("9+", 0)]
    assert plan.speculative.origin["num_speculative_tokens_per_batch_size"] == "builtin"
