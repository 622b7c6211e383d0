"""Secrets stay masked in the forms that slipped through before: several values of one option, text that is
not JSON, a preview that cut the secret, and escaping that changed it."""

from __future__ import annotations

import json
import shlex

import pytest

from fuzz_plan_cases import LLAMA, Case, problem, run_case
from nim_specdec.text.redact import HIDDEN, MASK, preview, redact_argv, redact_env_value, redact_text

K1, K2 = "sk-first-0123456789abcdef", "sk-second-fedcba9876543210"


def plan_of(tmp_path, env: dict, args: list[str]):
    files = {"target/config.json": json.dumps(LLAMA).encode()}
    result = run_case(Case(env={"NIM_MODEL_PATH": "{dir}/target", **env}, args=args, files=files), tmp_path / "c")
    assert problem(result) is None, result
    return result


@pytest.mark.parametrize(
    "argv,shown",
    [
        (["--api-key", K1, K2, "--port", "8000"], ["--api-key", MASK, MASK, "--port", "8000"]),
        (["--api_key", K1, K2], ["--api_key", MASK, MASK]),
        (["--api-k", K1, K2, "-tp", "2"], ["--api-k", MASK, MASK, "-tp", "2"]),
        (["--api-key=" + K1, "--port", "1"], ["--api-key=" + MASK, "--port", "1"]),
        (["--hf-token", K1, "model"], ["--hf-token", MASK, "model"]),  # one value: what follows is not the token
        (["--hf-token", "--port", "1"], ["--hf-token", "--port", "1"]),
    ],
)
def test_every_value_of_a_secret_option_is_masked_and_nothing_after_it(argv, shown):
    assert redact_argv(argv) == shown


@pytest.mark.parametrize("where", ["args", "passthrough"])
def test_both_api_keys_are_masked_in_the_plans_argv(tmp_path, where):
    keys = ["--api-key", K1, K2]
    env = {"NIM_PASSTHROUGH_ARGS": shlex.join(keys)} if where == "passthrough" else {}
    result = plan_of(tmp_path, env, keys if where == "args" else [])
    assert result.code == 0, result.stderr
    plan = json.loads(result.stdout)
    assert K1 not in result.stdout and K2 not in result.stdout
    assert plan["argv"][plan["argv"].index("--api-key") + 1 :][:2] == [MASK, MASK]


def test_passthrough_variable_shows_both_values_masked():
    shown = redact_env_value("NIM_PASSTHROUGH_ARGS", f"--api-key {K1} {K2} --max-num-seqs 4")
    assert shown == f"--api-key '{MASK}' '{MASK}' --max-num-seqs 4"


@pytest.mark.parametrize(
    "text",
    [
        '{"api_key": "' + K1 + '", "max_num_seqs": ',  # broken JSON
        "{'api_key': '" + K1 + "'}",  # a Python dict
        '{"max_num_seqs": 4, "api_key": "' + K1 + '" "x": 1}',
        '["--api-key", "' + K1 + '"]',  # valid JSON, not an object
        '"api_key ' + K1 + '"',
        "api_key=" + K1,
        '{"hf_overrides": {"token": "' + K1 + '"}, ' + "x" * 100,  # the secret sits before the cut
    ],
)
def test_nim_specdec_args_echoed_in_an_error_never_shows_the_key(tmp_path, text):
    result = plan_of(tmp_path, {"NIM_SPECDEC_ENABLE": "1", "NIM_SPECDEC_ARGS": text}, [])
    assert result.code == 2 and "NIM_SPECDEC_ARGS" in result.stderr, result.stderr
    assert K1 not in result.stderr and K1[:8] not in result.stderr, result.stderr


def test_a_preview_masks_before_it_cuts():
    text = '{"api_key": "' + "k" * 70 + K1 + '"'
    assert preview(text) == '{"api_key": ***'
    assert preview('["--api-key", "x"]') == HIDDEN
    assert preview('{"max_num_seqs": 4}') == '{"max_num_seqs": 4}'


def test_a_secret_variable_cut_by_a_preview_is_masked_by_what_is_left(tmp_path):
    long_path = "/" + "a" * 60 + K1 + "b" * 5000
    result = plan_of(tmp_path, {"HF_TOKEN": K1, "NIM_CACHE_PATH": long_path}, [])
    assert result.code == 2 and "NIM_CACHE_PATH" in result.stderr, result.stderr
    assert "..." in result.stderr and K1[:8] not in result.stderr and MASK in result.stderr


@pytest.mark.parametrize(
    "secret",
    [
        "back\\slash-secret-value",
        "tab\tseparated-secret",
        "esc\x1b[31m-secret-value",
        "two  spaces-secret-value",
        "  leading-and-trailing-secret  ",
        "new\nline-secret-value",
    ],
)
def test_a_secret_changed_by_escaping_is_still_masked_in_the_error_line(tmp_path, secret):
    result = plan_of(tmp_path, {"HF_TOKEN": secret, "NIM_LOG_LEVEL": "x" + secret}, [])
    assert result.code == 2 and "NIM_LOG_LEVEL" in result.stderr, result.stderr
    flat = " ".join(secret.split())
    for form in {secret, flat, flat.replace("\x1b", "\\x1b"), json.dumps(secret)[1:-1], flat[:8], flat[-8:]}:
        assert form not in result.stderr, (form, result.stderr)
    assert MASK in result.stderr


@pytest.mark.parametrize(
    "text,secret,expected",
    [
        ("cut at sk-first-01234...", K1, "cut at ***..."),
        ("...cdef tail", K1, "...cdef tail"),  # 4 characters are not enough to tell
        ("...456789abcdef tail", K1, "...*** tail"),
        ("escaped " + json.dumps("a\\b\tc-secret-value")[1:-1], "a\\b\tc-secret-value", "escaped ***"),
        ("a test, testing", "test", "a ***, testing"),
    ],
)
def test_redact_text_masks_cut_and_escaped_forms(text, secret, expected):
    assert redact_text(text, [secret]) == expected
