"""Secrets are masked in every form they can take, and nothing unrelated is masked with them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core_fixtures import facts
from nim_specdec.errors import EXIT_CONFIG, ConfigError
from nim_specdec.launch.resolve import plan_for, public
from nim_specdec.text.redact import SECRET_OPTIONS, is_secret_name, redact_argv, redact_text

SECRET = "sk-live-0123456789abcdef"


def shown_plan(models, env_extra: dict, args: list[str]) -> str:
    env = {"NIM_CACHE_PATH": str(models["cache"]), "NIM_MODEL_PATH": str(models["target"]), **env_extra}
    settings, plan = plan_for(env, args, facts())
    return json.dumps(public(plan, settings.host.secrets))


@pytest.mark.parametrize(
    "args",
    [
        ["--api-key", SECRET],
        ["--api-key=" + SECRET],
        ["--api-k", SECRET],
        ["--api_key", SECRET],
        ["--hf-tok=" + SECRET],
        ["--hf_token", SECRET],
        ["--api-key", "first-key-1234", SECRET, "--seed", "0"],
    ],
)
def test_secret_options_in_any_spelling_vllm_accepts(models, args):
    assert SECRET not in shown_plan(models, {}, args)
    assert SECRET not in shown_plan(models, {"NIM_PASSTHROUGH_ARGS": " ".join(args)}, [])


@pytest.mark.parametrize(
    "specdec_args",
    [
        {"api_key": SECRET},
        {"hf_overrides": {"auth": {"accessToken": SECRET}}},
        {"hf_overrides": {"list": [{"password": SECRET}]}},
    ],
)
def test_secret_keys_at_any_depth_of_nim_specdec_args(models, specdec_args):
    text = shown_plan(models, {"NIM_SPECDEC_ENABLE": "1", "NIM_SPECDEC_ARGS": json.dumps(specdec_args)}, [])
    assert SECRET not in text


def test_any_value_equal_to_a_secret_variable_is_masked_in_the_plan(models):
    text = shown_plan(models, {"HF_TOKEN": SECRET, "NIM_SERVED_MODEL_NAME": SECRET}, [])
    assert SECRET not in text


def test_short_secrets_do_not_mangle_unrelated_text(models):
    text = shown_plan(
        models,
        {"HF_TOKEN": "test", "NIM_SERVED_MODEL_NAME": "testing-model"},
        ["--max-num-batched-tokens", "8192", "--tokenizer", "/tok"],
    )
    plan = json.loads(text)
    assert plan["target"]["served_model_name"] == "testing-model"
    assert plan["engine_args"]["max_num_batched_tokens"] == 8192 and plan["engine_args"]["tokenizer"] == "/tok"
    assert redact_text("a test, testing", ["test"]) == "a ***, testing"


@pytest.mark.parametrize(
    "name,secret",
    [
        ("HF_TOKEN", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("NGC_CLI_API_KEY", True),
        ("apiKey", True),
        ("DB_PASSWORD", True),
        ("AWS_ACCESS_KEY_ID", True),
        ("GOOGLE_APPLICATION_CREDENTIALS", True),
        ("auth_token", True),
        ("max_num_batched_tokens", False),
        ("--tokenizer", False),
        ("--ssl-keyfile", False),
        ("num_speculative_tokens", False),
        ("--long-prefill-token-threshold", False),
        ("TOKENIZERS_PARALLELISM", False),
    ],
)
def test_secret_like_names(name, secret):
    assert is_secret_name(name) is secret


@pytest.mark.parametrize(
    "uri",
    [
        "s3://AKIA:wJalrXUtnFEMI@bucket/model",
        "hf://hf_aaaaaaaaaaaaaaaaaaaa@org/name",
        "s3://bucket/model?X-Amz-Signature=deadbeefcafe",
        "gs://bucket/m?token=ya29.abcdef",
    ],
)
@pytest.mark.parametrize("variable", ["NIM_MODEL_PATH", "NIM_DRAFT_MODEL_PATH"])
def test_uri_credentials_are_refused_and_never_echoed(models, uri, variable):
    env = {
        "NIM_CACHE_PATH": str(models["cache"]),
        "NIM_MODEL_PATH": str(models["target"]),
        "NIM_SPECDEC_ENABLE": "1",
        variable: uri,
    }
    with pytest.raises(ConfigError) as err:
        plan_for(env, [], facts())
    line = err.value.one_line()
    assert variable in line
    for secret in ("wJalrXUtnFEMI", "hf_aaaaaaaaaaaaaaaaaaaa", "deadbeefcafe", "ya29.abcdef"):
        assert secret not in line


def test_error_line_echoing_a_secret_value_is_masked():
    env = {k: v for k, v in os.environ.items() if not k.startswith("NIM_")}
    env.update(NIM_LOG_LEVEL=SECRET, HF_TOKEN=SECRET, NIM_MODEL_PATH="/nonexistent")
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2] / "src")
    proc = subprocess.run(
        [sys.executable, "-m", "nim_specdec", "plan"], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == EXIT_CONFIG and "NIM_LOG_LEVEL" in proc.stderr
    assert SECRET not in proc.stderr and "***" in proc.stderr


def test_json_values_of_ordinary_options_keep_their_text_unless_they_hold_a_secret():
    plain = '{"temperature": 0.5}'
    assert redact_argv(["--override-generation-config", plain]) == ["--override-generation-config", plain]
    masked = redact_argv(["--hf-overrides=" + json.dumps({"token": SECRET})])
    assert SECRET not in masked[0] and masked[0].startswith("--hf-overrides=")


def test_secret_options_match_the_installed_vllm():
    """Every vLLM option that takes a value and has a secret-like name is in SECRET_OPTIONS, so that its
    abbreviations are masked too."""
    from vllm.entrypoints.launchers.cli_args import make_arg_parser  # noqa: PLC0415 - costs seconds
    from vllm.utils.argparse_utils import FlexibleArgumentParser  # noqa: PLC0415

    parser = make_arg_parser(FlexibleArgumentParser())
    assert parser.allow_abbrev
    found = {
        o for a in parser._actions if a.nargs != 0 for o in a.option_strings if o.startswith("--") and is_secret_name(o)
    }
    assert found == set(SECRET_OPTIONS)


def test_every_key_of_a_multi_key_option_is_masked_in_the_checks_quote_of_vllm():
    from nim_specdec.engines.vllm.check.judge import _secrets

    args = ["--model", "/m", "--api-key", "first-key-1234", SECRET, "--seed", "0"]
    quoted = redact_text(f"bad tokens first-key-1234 and {SECRET} for /m", _secrets(args, {}))
    assert "first-key-1234" not in quoted and SECRET not in quoted and "/m" in quoted
