"""The user's arguments read as SGLang 0.5.23's parser reads them, from the snapshot of its options."""

from __future__ import annotations

import pytest

from nim_specdec.engines.sglang.native_args import read_native_args
from nim_specdec.errors import ConfigError

CASES = [
    ("nothing", [], (), None, None, ()),
    (
        "speculative options split from the rest",
        ["--speculative-algorithm", "EAGLE3", "--tp-size", "2", "--speculative-num-steps=5"],
        (("speculative_algorithm", "EAGLE3"), ("speculative_num_steps", "5")),
        None,
        None,
        ("--tp-size", "2"),
    ),
    ("a flag has no value", ["--speculative-adaptive"], (("speculative_adaptive", None),), None, None, ()),
    (
        "an alias sets its field",
        ["--speculative-draft-model", "/d"],
        (("speculative_draft_model_path", "/d"),),
        None,
        None,
        (),
    ),
    (
        "a unique prefix is the option",
        ["--speculative-algo", "NGRAM"],
        (("speculative_algorithm", "NGRAM"),),
        None,
        None,
        (),
    ),
    ("the model path, both spellings", ["--model", "/m"], (), "/m", None, ()),
    ("the guide's vLLM form", ["--speculative-config", '{"method": "ngram"}'], (), None, '{"method": "ngram"}', ()),
    ("the guide's vLLM form with =", ['--speculative-config={"a": 1}'], (), None, '{"a": 1}', ()),
    (
        "a list option takes its values",
        ["--lora-paths", "a", "b", "--trust-remote-code"],
        (),
        None,
        None,
        ("--lora-paths", "a", "b", "--trust-remote-code"),
    ),
]


@pytest.mark.parametrize(("case", "argv", "speculative", "model", "vllm", "other"), CASES, ids=[c[0] for c in CASES])
def test_arguments_read_as_sglang_reads_them(case, argv, speculative, model, vllm, other):
    args = read_native_args(argv)
    assert (args.speculative, args.model_path, args.vllm_config, args.other) == (speculative, model, vllm, other)


def test_the_last_of_an_option_wins():
    args = read_native_args(["--speculative-num-steps", "2", "--speculative-num-steps", "4"])
    assert args.speculative_fields() == {"speculative_num_steps": "4"}


REFUSED = [
    (["--no-such-option", "1"], "SGLang has no option '--no-such-option'"),
    (["--speculative-n", "3"], "ambiguous SGLang option '--speculative-n'"),
    (["--speculative-num-steps"], "--speculative-num-steps has no value"),
    (["--speculative-adaptive=1"], "--speculative-adaptive takes no value"),
    (["stray"], "unexpected argument 'stray'"),
    (["--speculative-config"], "--speculative-config has no value"),
]


@pytest.mark.parametrize(("argv", "fragment"), REFUSED)
def test_what_sglang_would_refuse_is_refused_in_one_line(argv, fragment):
    with pytest.raises(ConfigError) as caught:
        read_native_args(argv, where="NIM_PASSTHROUGH_ARGS")
    assert str(caught.value).startswith("NIM_PASSTHROUGH_ARGS: ") and fragment in str(caught.value)


def test_a_hostile_option_is_shown_short_and_inert():
    with pytest.raises(ConfigError) as caught:
        read_native_args(["--x" + "\x1b[2J" * 500])
    text = caught.value.one_line()
    assert len(text) < 600 and "\x1b" not in text and "\n" not in text  # 200 characters of it, escaped
