"""Hostile values of each class end as one line with the documented exit code, naming what is wrong."""

from __future__ import annotations

import json
import struct

import pytest

from fuzz_plan_cases import EAGLE3, LLAMA, Case, problem, run_case

EAGLE = {
    "NIM_SPECDEC_ENABLE": "1",
    "NIM_MODEL_PATH": "{dir}/target",
    "NIM_DRAFT_MODEL_PATH": "{dir}/draft",
    "NIM_SPECDEC_ARGS": json.dumps({"speculative_config": {"method": "eagle3", "num_speculative_tokens": 3}}),
}


def models(target: dict | bytes = LLAMA, draft: dict | bytes = EAGLE3, **extra: bytes) -> dict[str, bytes]:
    raw = {"target/config.json": target, "draft/config.json": draft}
    files = {k: v if isinstance(v, bytes) else json.dumps(v).encode() for k, v in raw.items()}
    files.update({k.replace("__", "/").replace("_dot_", "."): v for k, v in extra.items()})
    return files


def outcome_of(tmp_path, env=None, args=(), files=None):
    result = run_case(Case(env={**EAGLE, **(env or {})}, args=list(args), files=files or models()), tmp_path / "c")
    assert problem(result) is None, result
    return result


@pytest.mark.parametrize(
    "env,args,fragment",
    [
        ({"NIM_SPECDEC_ARGS": '{"max_num_seqs": NaN}'}, [], "NIM_SPECDEC_ARGS: NaN is not a JSON number"),
        (
            {"NIM_SPECDEC_ARGS": '{"gpu_memory_utilization": 1e999}'},
            [],
            "NIM_SPECDEC_ARGS: number 1e999 is out of range",
        ),
        ({"NIM_SPECDEC_ARGS": '{"max_num_seqs": ' + "9" * 5000 + "}"}, [], "is too large"),
        ({"NIM_SPECDEC_ARGS": '{"a": ' + "[" * 5000 + "]" * 5000 + "}"}, [], "nested more than 64 levels"),
        (
            {},
            ["--speculative-config", '{"method": "ngram", "num_speculative_tokens": Infinity}'],
            "Infinity is not a JSON number",
        ),
        ({}, ["--gpu-memory-utilization", "NaN"], "--gpu-memory-utilization: invalid value 'NaN'"),
        ({}, ["--max-num-seqs", "9" * 5000], "--max-num-seqs: invalid value"),
        ({}, ["--tensor-parallel-size=0"], "--tensor-parallel-size: invalid value '0'"),
        (
            {"NIM_PASSTHROUGH_ARGS": "--max-model-len abc"},
            [],
            "NIM_PASSTHROUGH_ARGS --max-model-len: invalid value 'abc'",
        ),
        ({"NIM_SPECDEC_ARGS": '{"max_num_seqs": "x"}'}, [], "NIM_SPECDEC_ARGS --max-num-seqs"),
        ({"NIM_DOWNLOAD_TIMEOUT": "NaN"}, [], "NIM_DOWNLOAD_TIMEOUT: 'NaN' is not a finite number"),
        ({"NIM_DOWNLOAD_RETRIES": "1e999"}, [], "NIM_DOWNLOAD_RETRIES"),
        ({"NIM_CACHE_LOCK_TIMEOUT": "-inf"}, [], "NIM_CACHE_LOCK_TIMEOUT"),
        ({"NIM_DOWNLOAD_CONCURRENCY": "2.5"}, [], "NIM_DOWNLOAD_CONCURRENCY: '2.5' is not a whole number"),
    ],
)
def test_bad_numbers_are_configuration_errors_naming_the_source(tmp_path, env, args, fragment):
    result = outcome_of(tmp_path, env, args)
    assert result.code == 2 and fragment in result.stderr, result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["--max-model-len", "32k"],
        ["--max-model-len=-1"],
        ["--gpu-memory-utilization", "1"],
        ["--max-num-seqs", " 8 "],
        ["--served-model-name", "Infinity"],
    ],
)
def test_good_numbers_and_number_like_names_are_accepted(tmp_path, args):
    result = outcome_of(tmp_path, {}, args)
    assert result.code == 0, result.stderr
    plan = json.loads(result.stdout)
    if args[0] == "--served-model-name":
        assert plan["engine_args"]["served_model_name"] == "Infinity"


@pytest.mark.parametrize(
    "files,fragment",
    [
        (models(target=b"[" * 100000), "target/config.json"),
        (models(target=b'{"hidden_size": NaN}'), "target/config.json"),
        (models(target={**LLAMA, "num_hidden_layers": "x"}), "num_hidden_layers"),
        (models(target={**LLAMA, "hidden_size": 10**30}), "hidden_size"),
        (models(draft={**EAGLE3, "text_config": []}), "draft/config.json"),
        (models(draft={**EAGLE3, "rope_scaling": {"factor": "x", "rope_type": "linear"}}), "rope_scaling.factor"),
        (models(draft__model_dot_safetensors=struct.pack("<Q", 4) + b"[[[["), "draft/model.safetensors"),
        (
            models(draft__model_dot_safetensors=struct.pack("<Q", 40) + b'{"x": {"dtype": "BF16", "shape": [1e999]}}'),
            "draft/model.safetensors",
        ),
        (
            models(
                draft__model_dot_safetensors_dot_index_dot_json=b'{"weight_map": {"w": "../../target/config.json"}}'
            ),
            "outside the model folder",
        ),
        (
            models(draft__model_dot_safetensors_dot_index_dot_json=b'{"weight_map": {"w": "/etc/hostname"}}'),
            "outside the model folder",
        ),
    ],
)
def test_bad_model_files_are_exit_3_naming_the_file(tmp_path, files, fragment):
    result = outcome_of(tmp_path, files=files)
    assert result.code == 3 and fragment in result.stderr, result.stderr


def test_control_characters_in_values_are_escaped_in_error_lines(tmp_path):
    result = outcome_of(tmp_path, {"NIM_LOG_LEVEL": "x\x1b[2J\nINFO forged"})
    assert result.code == 2 and "\x1b" not in result.stderr and len(result.stderr.splitlines()) == 1
    assert "\\x1b[2J" in result.stderr


@pytest.mark.parametrize(
    "env",
    [
        {"NIM_DRAFT_MODEL_PATH": "s3://b\udcff/d"},
        {"NIM_MODEL_PATH": "hf://org/re\udcffpo"},
        {"NIM_DRAFT_MODEL_PATH": "gs://bucket/\udc80x"},
    ],
)
def test_uri_with_bytes_that_are_not_utf8_is_a_configuration_error(tmp_path, env):
    result = outcome_of(tmp_path, env)
    assert result.code == 2 and "is not valid UTF-8 text" in result.stderr, result.stderr
    result.stderr.encode("utf-8")


def test_local_path_with_bytes_that_are_not_utf8_is_reported_printably(tmp_path):
    result = outcome_of(tmp_path, {"NIM_MODEL_PATH": "/x\udcff/y"})
    assert result.code == 3 and "\\udcff" in result.stderr, result.stderr


@pytest.mark.parametrize(
    "env,fragment",
    [
        ({"NIM_SPECDEC_ARGS": '{"max_num_seqs": 4, "max_num_seqs": 8}'}, "key 'max_num_seqs' is given twice"),
        (
            {
                "NIM_SPECDEC_ARGS": '{"speculative_config": {"method": "ngram", "num_speculative_tokens": 2}, '
                '"speculative-config": {"method": "ngram", "num_speculative_tokens": 3}}'
            },
            "key 'speculative-config' is given twice",
        ),
        (
            {"NIM_SPECDEC_ARGS": '{"speculative_config": null, "speculative-config": {"method": "ngram"}}'},
            "given twice",
        ),
        (
            {"NIM_SPECDEC_ARGS": '{"speculative_config": {"method": "ngram", "method": "eagle3"}}'},
            "key 'method' is given twice",
        ),
        (
            {"NIM_CAPTURE_ENABLE": "1", "NIM_CAPTURE_ARGS": '{"format": "raw_payload", "format": "mooncake_payload"}'},
            "key 'format' is given twice",
        ),
    ],
)
def test_duplicate_json_keys_are_refused_like_duplicate_engine_keys(tmp_path, env, fragment):
    result = outcome_of(tmp_path, env)
    assert result.code == 2 and fragment in result.stderr, result.stderr


@pytest.mark.parametrize(
    "env,token",
    [
        ({"NIM_SERVED_MODEL_NAME": "-x"}, "--served-model-name=-x"),
        ({"NIM_SERVED_MODEL_NAME": "--port"}, "--served-model-name=--port"),
        ({"NIM_SPECDEC_ARGS": '{"served_model_name": ["-m"]}'}, "--served-model-name=-m"),
    ],
)
def test_a_value_starting_with_a_dash_reaches_vllm_as_the_value_of_its_option(tmp_path, env, token):
    result = outcome_of(tmp_path, env)
    assert result.code == 0, result.stderr
    argv = json.loads(result.stdout)["argv"]
    assert token in argv and argv.count("--port") <= 1


def test_several_values_one_starting_with_a_dash_are_refused(tmp_path):
    result = outcome_of(tmp_path, {"NIM_SPECDEC_ARGS": '{"served_model_name": ["-a", "b"]}'})
    assert result.code == 2 and "starting with '-'" in result.stderr, result.stderr
