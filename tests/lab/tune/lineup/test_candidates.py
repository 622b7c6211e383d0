"""What tune serves and recommends: candidate configs, server environments, recommended variables."""

from __future__ import annotations

import json

import pytest

from nim_specdec.config.specdec_args import parse_specdec_args
from nim_specdec_lab.tune.lineup.candidates import (
    Candidate,
    candidate_env,
    candidate_list,
    configured_candidate,
    ngram_config,
    scheduled_config,
    strip_spec_args,
    suffix_config,
)

STRIP = [
    ("space-form", ["--speculative-config", '{"method": "ngram"}', "--port", "9"], ["--port", "9"]),
    ("equals-form", ['--speculative-config={"method": "ngram"}', "--dtype", "bfloat16"], ["--dtype", "bfloat16"]),
    (
        "dotted",
        ["/m", "--speculative-config.num_speculative_tokens", "4", "--enforce-eager"],
        ["/m", "--enforce-eager"],
    ),
    ("dotted-equals", ["--speculative-config.method=ngram", "--seed", "-1"], ["--seed", "-1"]),
    ("none", ["--max-num-seqs", "8"], ["--max-num-seqs", "8"]),
]


@pytest.mark.parametrize("case_id,tokens,expected", STRIP, ids=[c[0] for c in STRIP])
def test_strip_spec_args(case_id, tokens, expected):
    assert strip_spec_args(tokens) == expected


DRAFT_CASES = [
    (
        "bare-name-from-variable",
        {"method": "draft_model", "model": "/ws/draft", "num_speculative_tokens": 4},
        {"name": "draft", "source": "/models/d", "path": "/ws/draft", "chosen_by": "NIM_DRAFT_MODEL_PATH"},
        "draft",
    ),
    (
        "uri-in-config",
        {"method": "eagle3", "model": "/ws/draft", "num_speculative_tokens": 3},
        {"name": "draft", "source": "s3://b/d", "path": "/ws/draft", "chosen_by": "speculative_config.model"},
        "s3://b/d",
    ),
    (
        "absolute-path",
        {"method": "draft_model", "model": "/abs/d", "num_speculative_tokens": 2},
        {"name": None, "source": "/abs/d", "path": "/abs/d", "chosen_by": "speculative_config.model"},
        "/abs/d",
    ),
]


@pytest.mark.parametrize("case_id,config,draft,model", DRAFT_CASES, ids=[c[0] for c in DRAFT_CASES])
def test_configured_candidate_puts_the_draft_back_as_the_user_wrote_it(case_id, config, draft, model):
    candidate = configured_candidate({"enabled": True, "config": config}, draft, kmax=5)
    assert candidate is not None and candidate.configured and candidate.config["model"] == model
    assert candidate.kmax == config["num_speculative_tokens"] and not candidate.simulated


def test_configured_candidate_off_and_default_k():
    assert configured_candidate({"enabled": False, "config": None}, None, 4) is None
    mtp = configured_candidate({"enabled": True, "config": {"method": "mtp"}}, None, 4)
    assert mtp.kmax == 4


def test_candidate_list_measures_a_configured_model_free_method_in_the_users_form():
    mine = Candidate("ngram", ngram_config(5, 2, 3), configured=True)
    free = [Candidate("ngram", ngram_config(4, 1, 4), False), Candidate("suffix", suffix_config(4), False)]
    assert [c.config for c in candidate_list(mine, free)] == [mine.config, free[1].config]
    assert all(c.simulated for c in free)
    eagle = Candidate("eagle3", {"method": "eagle3", "model": "d", "num_speculative_tokens": 3}, configured=True)
    assert [c.method for c in candidate_list(eagle, free)] == ["eagle3", "ngram", "suffix"]
    assert candidate_list(None, free) == free


def test_server_env_replaces_only_the_speculative_config():
    user = {
        "NIM_MODEL_PATH": "/m",
        "NIM_SPECDEC_ARGS": '{"max_num_seqs": 16, "speculative_config": {"method": "mtp"}}',
        "NIM_PASSTHROUGH_ARGS": "--dtype bfloat16 --speculative-config.num_speculative_tokens 2",
    }
    env = candidate_env(user, {"max_num_seqs": 16}, ngram_config(3, 1, 4))
    spec, engine = parse_specdec_args(env["NIM_SPECDEC_ARGS"])
    assert env["NIM_SPECDEC_ENABLE"] == "1" and env["NIM_MODEL_PATH"] == "/m"
    assert spec == ngram_config(3, 1, 4) and engine == {"max_num_seqs": 16}
    assert env["NIM_PASSTHROUGH_ARGS"] == "--dtype bfloat16"
    off = candidate_env(user, {"max_num_seqs": 16}, None)
    assert off["NIM_SPECDEC_ENABLE"] == "0" and "NIM_SPECDEC_ARGS" not in off


SCHEDULED = [
    (
        "mixed",
        ((1, 2, 3), (3, 8, 0)),
        {"num_speculative_tokens": 3, "num_speculative_tokens_per_batch_size": [[1, 2, 3], [3, 8, 0]]},
    ),
    (
        "lower-max",
        ((1, 4, 2), (5, 8, 1)),
        {"num_speculative_tokens": 2, "num_speculative_tokens_per_batch_size": [[1, 4, 2], [5, 8, 1]]},
    ),
    ("uniform-is-static", ((1, 8, 2),), {"num_speculative_tokens": 2}),
]


@pytest.mark.parametrize("case_id,ranges,expected", SCHEDULED, ids=[c[0] for c in SCHEDULED])
def test_scheduled_config(case_id, ranges, expected):
    config = scheduled_config(Candidate("ngram", ngram_config(4, 1, 4), False), ranges)
    assert {k: v for k, v in config.items() if k in expected or k.startswith("num_")} == expected
    assert config["prompt_lookup_max"] == 4
    json.dumps(config)


def test_all_zero_schedule_is_off():
    assert scheduled_config(Candidate("ngram", ngram_config(4, 1, 4), False), ((1, 8, 0),)) is None


@pytest.mark.parametrize(
    "acceptance, k",
    [
        ({"draft": {"num_speculative_tokens": 5}}, 5),
        (None, 4),
        ({"draft": {"num_speculative_tokens": True}}, 4),
        ({"draft": {"num_speculative_tokens": 0}}, 4),
        ({"draft": "odd"}, 4),
    ],
)
def test_a_trained_draft_is_served_by_its_path_at_its_measured_k(acceptance, k):
    from nim_specdec_lab.tune.lineup.candidates import trained_draft_candidate

    found = trained_draft_candidate("/drafts/own/draft", acceptance if acceptance != {"draft": "odd"} else {}, 4)
    assert found == Candidate(
        "eagle3", {"method": "eagle3", "model": "/drafts/own/draft", "num_speculative_tokens": k}, False
    )
    env = candidate_env({}, {}, found.config)
    assert parse_specdec_args(env["NIM_SPECDEC_ARGS"])[0]["model"] == "/drafts/own/draft"
