"""Secrets leave the process masked, whatever their shape: at the endpoints, in argv, in error lines, and
never on a child's command line."""

from __future__ import annotations

import json
import sys

import pytest
from test_hostile_inputs import EAGLE, models

from fuzz_plan_cases import Case, run_case
from nim_specdec.engines.vllm.argv.user_args import parse_vllm_args
from nim_specdec.server.endpoints import NimEndpointsMiddleware
from server.test_asgi_endpoints import get as asgi_get

# One key in 64 that secrets.token_urlsafe() draws starts with '-'.
DASH_KEY = "-Zq3xW9_secretvalue_8KpL"
PLAIN_KEY = "Plain_secretvalue_77QmR"


def plan_of(tmp_path, env=None, args=()):
    return run_case(Case(env={**EAGLE, **(env or {})}, args=list(args), files=models()), tmp_path / "c")


async def _not_found(scope, receive, send):
    await send({"type": "http.response.start", "status": 404, "headers": []})
    await send({"type": "http.response.body", "body": b"{}"})


@pytest.mark.parametrize("path", ["/v1/specdec/config", "/v1/metadata"])
def test_endpoints_serve_the_speculative_config_masked_as_the_plan_shows_it(monkeypatch, path):
    spec = {
        "method": "eagle3",
        "num_speculative_tokens": 3,
        "draft_load_config": {"model_loader_extra_config": {"aws_secret_access_key": PLAIN_KEY, "region": "x"}},
        "model": "s3://user:" + PLAIN_KEY + "@host/d",
    }
    monkeypatch.setattr(sys, "argv", ["api_server", "--model", "m", "--speculative-config", json.dumps(spec)])
    _status, body = asgi_get(NimEndpointsMiddleware(_not_found), path)
    assert PLAIN_KEY.encode() not in body, body
    document = json.loads(body)
    served = document["speculative_config"] if path.endswith("config") else document["speculative_decoding"]["config"]
    assert served["draft_load_config"]["model_loader_extra_config"] == {"aws_secret_access_key": "***", "region": "x"}
    assert served["num_speculative_tokens"] == 3


@pytest.mark.parametrize(
    "env,args",
    [
        ({}, ["--api-key", DASH_KEY]),
        ({}, ["--hf-token", DASH_KEY]),
        ({"NIM_PASSTHROUGH_ARGS": f"--api-key {DASH_KEY}"}, []),
        ({"NIM_PASSTHROUGH_ARGS": f"--hf-token {DASH_KEY} --max-num-seqs 4"}, []),
    ],
)
def test_a_secret_starting_with_a_dash_is_the_value_of_its_option_and_never_printed(tmp_path, env, args):
    result = plan_of(tmp_path, env, args)
    assert result.code == 0, result.stderr
    assert DASH_KEY.lstrip("-") not in result.stdout + result.stderr
    assert PLAIN_KEY not in result.stdout + result.stderr
    plan = json.loads(result.stdout)
    assert not any(DASH_KEY.lstrip("-")[:8] in k for k in plan["engine_args"])


def test_a_dash_value_reaches_vllm_joined_to_its_option():
    parsed = parse_vllm_args(["--api-key", DASH_KEY, "--max-num-seqs", "4"], "argument")
    assert [o.tokens for o in parsed.options] == [(f"--api-key={DASH_KEY}",), ("--max-num-seqs", "4")]
    parsed = parse_vllm_args(["--hf-token", DASH_KEY], "argument")
    assert [o.tokens for o in parsed.options] == [(f"--hf-token={DASH_KEY}",)]


@pytest.mark.parametrize(
    "env,args",
    [
        ({"NIM_SPECDEC_ARGS": json.dumps({"api_key": [PLAIN_KEY, DASH_KEY]})}, []),
        ({}, ["--api-key", PLAIN_KEY, DASH_KEY, "-Other_secretvalue_1"]),
        ({}, ["--api-key", PLAIN_KEY, DASH_KEY]),
        ({"NIM_PASSTHROUGH_ARGS": f"--api-key {PLAIN_KEY} {DASH_KEY}"}, []),
    ],
)
def test_a_refused_list_of_keys_names_the_option_never_a_value(tmp_path, env, args):
    result = plan_of(tmp_path, env, args)
    out = result.stdout + result.stderr
    assert PLAIN_KEY not in out and DASH_KEY.lstrip("-") not in out and "Other_secretvalue" not in out, out
    assert result.code == 2 and "--api-key" in result.stderr and len(result.stderr.splitlines()) == 1


def test_a_secret_in_the_string_form_of_speculative_config_is_masked_everywhere(tmp_path):
    inner = json.dumps(
        {
            "method": "eagle3",
            "num_speculative_tokens": 3,
            "draft_load_config": {"model_loader_extra_config": {"secret_key": PLAIN_KEY}},
        }
    )
    result = plan_of(tmp_path, {"NIM_SPECDEC_ARGS": json.dumps({"speculative_config": inner})})
    assert PLAIN_KEY not in result.stdout + result.stderr, result.stdout


@pytest.mark.parametrize("client", ["1", "0"])
@pytest.mark.parametrize("variable", ["AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"])
def test_credentials_in_an_s3_endpoint_url_are_refused_before_any_child_sees_them(tmp_path, client, variable):
    from nim_specdec.config.sources import parse_source
    from nim_specdec.errors import ConfigError
    from nim_specdec.fetchers.registry import get_fetcher
    from servers.harness import context_for

    env = {variable: f"http://user:{PLAIN_KEY}@127.0.0.1:9/", "NIM_S5CMD": client, "AWS_ACCESS_KEY_ID": "a"}
    with pytest.raises(ConfigError) as err:
        get_fetcher("s3").fetch(parse_source("s3://bucket/model", "X"), context_for(env, tmp_path))
    line = err.value.one_line()
    assert variable in line and PLAIN_KEY not in line and "AWS_SECRET_ACCESS_KEY" in line, line
    assert err.value.exit_code == 2


def test_a_second_key_starting_with_two_dashes_is_never_named_as_an_option(tmp_path):
    key = "--WCsVdc_hKXG7tdJLTFU26DtA-eYE9"  # found by bench/bench_fuzz_inputs.py
    result = plan_of(tmp_path, args=["--api-key", PLAIN_KEY, key, "-x9"])
    assert result.code == 2 and "--api-key" in result.stderr, result.stderr
    assert "WCsVdc" not in result.stdout + result.stderr and PLAIN_KEY not in result.stderr
