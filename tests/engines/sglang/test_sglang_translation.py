"""The guide's vLLM-form config as SGLang 0.5's flags, the user's own SGLang arguments over them, and what SGLang
cannot express refused in one line naming the key, the value and the fix."""

from __future__ import annotations

import pytest

from nim_specdec.engines.sglang.native_args import read_native_args
from nim_specdec.engines.sglang.translation import merge_native, translate_config
from nim_specdec.errors import ConfigError

EAGLE3_FLAGS = (
    "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "/ws/eagle3_draft",
    "--speculative-num-steps", "3", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4",
)  # fmt: skip
TRANSLATED = [
    ("eagle3", {"method": "eagle3", "model": "/ws/eagle3_draft", "num_speculative_tokens": 3}, EAGLE3_FLAGS),
    (
        "mtp",
        {"method": "mtp", "num_speculative_tokens": 1},
        (
            "--speculative-algorithm",
            "EAGLE",
            "--speculative-num-steps",
            "1",
            "--speculative-eagle-topk",
            "1",
            "--speculative-num-draft-tokens",
            "2",
        ),
    ),
    (
        "ngram",
        {"method": "ngram", "num_speculative_tokens": 3},
        (
            "--speculative-algorithm",
            "NGRAM",
            "--speculative-num-draft-tokens",
            "4",
            "--speculative-ngram-min-bfs-breadth",
            "1",
            "--speculative-ngram-max-bfs-breadth",
            "1",
        ),
    ),
    (
        "dspark without a draft: SGLang looks in the target",
        {"method": "dspark", "num_speculative_tokens": 7},
        ("--speculative-algorithm", "DSPARK", "--speculative-dspark-block-size", "7"),
    ),
    (
        "draft keys",
        {"method": "draft_model", "model": "/d", "num_speculative_tokens": 2, "quantization": "fp8", "revision": "v1"},
        (
            "--speculative-algorithm",
            "STANDALONE",
            "--speculative-draft-model-path",
            "/d",
            "--speculative-num-steps",
            "2",
            "--speculative-eagle-topk",
            "1",
            "--speculative-num-draft-tokens",
            "3",
            "--speculative-draft-model-quantization",
            "fp8",
            "--speculative-draft-model-revision",
            "v1",
        ),
    ),
    (
        "no K: SGLang's own",
        {"method": "eagle", "model": "/d"},
        ("--speculative-algorithm", "EAGLE", "--speculative-draft-model-path", "/d"),
    ),
]


@pytest.mark.parametrize(("case", "config", "flags"), TRANSLATED, ids=[t[0] for t in TRANSLATED])
def test_the_vllm_form_becomes_sglang_flags(case, config, flags):
    translated = translate_config(config)
    assert translated.argv() == flags and translated.notes == ()


def test_ngrams_match_window_is_dropped_with_a_note_per_key():
    translated = translate_config(
        {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 1}
    )
    assert "--speculative-ngram-max-trie-depth" not in translated.argv()
    assert [note.split(" ")[0] for note in translated.notes] == [
        "speculative_config.prompt_lookup_max=4",
        "speculative_config.prompt_lookup_min=1",
    ]


REFUSED = [
    (
        {
            "method": "eagle3",
            "model": "/d",
            "num_speculative_tokens": 3,
            "num_speculative_tokens_per_batch_size": [[1, 3]],
        },
        "speculative_config.num_speculative_tokens_per_batch_size: SGLang 0.5 has no per-batch-size K schedule",
        "drop it, or pass --speculative-adaptive",
    ),
    (
        {"method": "suffix", "num_speculative_tokens": 8},
        "speculative_config.method: method 'suffix'",
        "NIM_ENGINE=vllm",
    ),
    (
        {"method": "eagle3", "model": "/d", "draft_tensor_parallel_size": 1},
        "speculative_config.draft_tensor_parallel_size: SGLang 0.5 has no counterpart for draft_tensor_parallel_size=1",
        "drop the key, or give SGLang's own --speculative-* argument",
    ),
    (
        {"method": "eagle3", "num_speculative_tokens": 3},
        "speculative_config.model: eagle3 needs a draft",
        "set `model`",
    ),
    ({"method": "ngram", "model": "/d"}, "speculative_config.model: ngram takes no draft", "drop `model`"),
    (
        {"method": "eagle3", "model": "/d", "num_speculative_tokens": 0},
        "num_speculative_tokens: invalid value 0",
        "1 to 1024",
    ),
    ({"method": "eagle3", "model": "/d", "num_speculative_tokens": True}, "invalid value True", "an integer"),
    (
        {"method": "eagle3", "model": "", "num_speculative_tokens": 2},
        "speculative_config.model: invalid value ''",
        "path",
    ),
]


@pytest.mark.parametrize(("config", "problem", "fix"), REFUSED)
def test_what_sglang_cannot_express_is_refused_in_one_line(config, problem, fix):
    with pytest.raises(ConfigError) as caught:
        translate_config(config)
    text = str(caught.value)
    assert problem in text and fix in text.partition("; ")[2] and "\n" not in text


def test_the_users_sglang_argument_wins_and_is_named():
    translated = translate_config({"method": "eagle3", "model": "/d", "num_speculative_tokens": 3})
    merged = merge_native(translated, read_native_args(["--speculative-num-steps", "5", "--speculative-adaptive"]))
    fields = dict(merged.fields)
    assert fields["speculative_num_steps"] == "5" and "speculative_adaptive" in fields
    assert fields["speculative_num_draft_tokens"] == "4"  # left as translated: SGLang's resolution is the judge
    assert merged.notes == ("--speculative-num-steps 5 given wins over 3 from the speculative config",)


def test_an_equal_value_given_again_makes_no_note():
    translated = translate_config({"method": "mtp", "num_speculative_tokens": 1})
    merged = merge_native(
        translated, read_native_args(["--speculative-algorithm", "NEXTN", "--speculative-num-steps", "1"])
    )
    assert merged.notes == () and dict(merged.fields)["speculative_algorithm"] == "NEXTN"


def test_another_native_algorithm_replaces_the_translated_flags_whole():
    translated = translate_config({"method": "eagle3", "model": "/d", "num_speculative_tokens": 3})
    merged = merge_native(translated, read_native_args(["--speculative-algorithm", "NGRAM"]))
    assert merged.argv() == ("--speculative-algorithm", "NGRAM")
    assert merged.notes == ("--speculative-algorithm NGRAM given: the speculative config's EAGLE3 flags are not used",)


def test_native_arguments_alone():
    merged = merge_native(
        None, read_native_args(["--speculative-algo", "NGRAM", "--speculative-num-draft-tokens", "8"])
    )
    assert merged.argv() == ("--speculative-algorithm", "NGRAM", "--speculative-num-draft-tokens", "8")
