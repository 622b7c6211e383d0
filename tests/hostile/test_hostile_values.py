"""Every value passed on to vLLM is checked for type and range, and each value has one reading: what the plan
reports (served names, speculative config and method) is read back from the command it plans, and a value
that could be read two ways (one key in two spellings, an empty speculative_config) is refused in one line."""

from __future__ import annotations

import json

import pytest

from fuzz_plan_cases import LLAMA, Case, problem, run_case

NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 1}
BASE = {
    "NIM_SPECDEC_ENABLE": "1",
    "NIM_MODEL_PATH": "{dir}/target",
    "NIM_SPECDEC_ARGS": json.dumps({"speculative_config": NGRAM}),
}


def plan(tmp_path, env=None, args=()):
    case = Case(env={**BASE, **(env or {})}, args=list(args), files={"target/config.json": json.dumps(LLAMA).encode()})
    result = run_case(case, tmp_path / "c")
    assert problem(result) is None, result
    return result


def _flag(argv: list[str], flag: str) -> list[str]:
    """The values the command gives `flag` (--flag V..., or --flag=V)."""
    for i, token in enumerate(argv):
        if token == flag:
            values = []
            for value in argv[i + 1 :]:
                if value.startswith("--"):
                    break
                values.append(value)
            return values
        if token.startswith(flag + "="):
            return [token.split("=", 1)[1]]
    return []


@pytest.mark.parametrize(
    "args,env,fragment",
    [
        (["--shutdown-timeout", "abc"], {}, "--shutdown-timeout: invalid value 'abc'"),
        (["--shutdown-timeout", "-5"], {}, "--shutdown-timeout: invalid value '-5'"),
        (["--shutdown-timeout", "nan"], {}, "--shutdown-timeout: invalid value"),
        (["--shutdown-timeout", "1e20"], {}, "--shutdown-timeout: invalid value"),
        (["--shutdown-timeout=2.5"], {}, "--shutdown-timeout: invalid value '2.5'"),
        ([], {"NIM_PASSTHROUGH_ARGS": "--shutdown-timeout 99999999"}, "NIM_PASSTHROUGH_ARGS --shutdown-timeout"),
        (["--nnodes", "0"], {}, "--nnodes: invalid value '0'"),
        (["--nnodes", "two"], {}, "--nnodes: invalid value 'two'"),
        (["--nnodes", "100000000000"], {}, "--nnodes: invalid value '100000000000'"),
        (["--nnodes", "2", "--node-rank", "2"], {}, "--node-rank: 2 is outside the group of 2 node(s)"),
        (["-n", "2", "-r", "5"], {}, "--node-rank: 5 is outside the group of 2 node(s)"),
        (["--node-rank", "-1"], {}, "--node-rank: invalid value '-1'"),
        (["--node-rank", "1"], {}, "--node-rank: 1 is outside the group of 1 node(s)"),
        (["--master-port", "0"], {}, "--master-port: invalid value '0'"),
        (["--master-port", "70000"], {}, "--master-port: invalid value '70000'"),
        (["--master-port", "http"], {}, "--master-port: invalid value 'http'"),
    ],
)
def test_values_passed_on_are_checked_for_type_and_range(tmp_path, args, env, fragment):
    result = plan(tmp_path, env, args)
    assert result.code == 2 and fragment in result.stderr, result.stderr


def test_good_multinode_values_and_drain_reach_the_command(tmp_path):
    args = ["--shutdown-timeout", "30", "--nnodes", "2", "--node-rank", "1", "--master-port", "29500"]
    result = plan(tmp_path, args=args)
    assert result.code == 0, result.stderr
    argv = json.loads(result.stdout)["argv"]
    assert _flag(argv, "--node-rank") == ["1"] and _flag(argv, "--shutdown-timeout") == ["30"]


@pytest.mark.parametrize(
    "env,args",
    [
        ({"NIM_SPECDEC_ARGS": json.dumps({"speculative_config": {**NGRAM, "num-speculative-tokens": 5}})}, []),
        ({}, ["--speculative-config", json.dumps({"num-speculative-tokens": 5, **NGRAM})]),
        ({}, ["--speculative-config.num-speculative-tokens", "5", "--speculative-config.num_speculative_tokens", "4"]),
        ({"NIM_PASSTHROUGH_ARGS": "--speculative-config '" + json.dumps({**NGRAM, "prompt-lookup-max": 2}) + "'"}, []),
    ],
)
def test_one_speculative_key_in_two_spellings_is_refused(tmp_path, env, args):
    result = plan(tmp_path, env, args)
    assert result.code == 2 and "is given twice (snake and kebab case)" in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "value,got",
    [
        ("", "an empty value"),
        ("  ", "an empty value"),
        ({}, "an empty value"),
        (None, "null"),
        (5, "int"),
        ([], "list"),
    ],
)
def test_an_empty_or_non_object_speculative_config_is_refused_not_replaced(tmp_path, value, got):
    result = plan(tmp_path, {"NIM_SPECDEC_ARGS": json.dumps({"speculative_config": value})})
    assert result.code == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert f"speculative_config must be a non-empty JSON object (or a JSON string holding one), got {got}" in (
        result.stderr
    )


def test_a_json_string_holding_an_empty_object_is_refused_too(tmp_path):
    result = plan(tmp_path, {"NIM_SPECDEC_ARGS": json.dumps({"speculative_config": "{}"})})
    assert result.code == 2 and "speculative_config" in result.stderr, result.stderr


@pytest.mark.parametrize(
    "env,args,names,warned",
    [
        ({"NIM_SERVED_MODEL_NAME": "from-variable"}, [], ["from-variable"], False),
        ({"NIM_SERVED_MODEL_NAME": "from-variable"}, ["--served-model-name", "from-cli"], ["from-cli"], True),
        ({"NIM_SERVED_MODEL_NAME": "v"}, ["--served-model-name", "a", "b"], ["a", "b"], True),
        ({"NIM_SERVED_MODEL_NAME": "v", "NIM_PASSTHROUGH_ARGS": "--served-model-name=pt"}, [], ["pt"], True),
        ({}, ["--served-model-name", "only-cli"], ["only-cli"], False),
        ({}, ["--served-model-name", "123"], ["123"], False),
    ],
)
def test_the_plan_reports_the_names_the_command_carries(tmp_path, env, args, names, warned):
    result = plan(tmp_path, env, args)
    assert result.code == 0, result.stderr
    shown = json.loads(result.stdout)
    assert list(shown["target"]["served_model_names"]) == names == _flag(shown["argv"], "--served-model-name")
    assert shown["target"]["served_model_name"] == names[0]
    said = any("NIM_SERVED_MODEL_NAME=" in w and "is overridden" in w for w in shown["warnings"])
    assert said == warned, shown["warnings"]


def test_the_reported_speculative_config_and_method_are_the_commands(tmp_path):
    result = plan(tmp_path, args=["--speculative-config.num_speculative_tokens", "5"])
    shown = json.loads(result.stdout)
    carried = json.loads(_flag(shown["argv"], "--speculative-config")[0])
    assert shown["speculative"]["config"] == carried and carried["num_speculative_tokens"] == 5
    assert shown["speculative"]["method"] == carried["method"] == "ngram"
