"""No exit 1: JSON read with a depth limit everywhere, names checked against the file-name limit, Prometheus
text of any shape, and numbers in records, markers and headers checked for range and against file sizes."""

from __future__ import annotations

import json
import os
import struct

import pytest
from test_hostile_inputs import EAGLE, models

from fuzz_plan_cases import EAGLE3, LLAMA, Case, problem, run_case
from nim_specdec.cli.main import main
from nim_specdec.config.sources import parse_source
from nim_specdec.errors import ConfigError, MaterializeError
from nim_specdec.fetchers.volume import cache

DEEP = "[" * 5000 + "]" * 5000


def outcome_of(tmp_path, env=None, args=(), files=None):
    result = run_case(Case(env={**EAGLE, **(env or {})}, args=list(args), files=files or models()), tmp_path / "c")
    assert problem(result) is None, result
    return result


@pytest.mark.parametrize(
    "files,fragment",
    [
        (models(draft={**EAGLE3, "architectures": [1]}), "architectures"),
        (models(draft={**EAGLE3, "architectures": [None, "LlamaForCausalLMEagle3"]}), "architectures"),
        (models(target={**LLAMA, "architectures": [{"a": 1}]}), "architectures"),
        (models(target={**LLAMA, "rope_parameters": {"rope_type": "linear", "factor": "x"}}), "rope_parameters"),
        (models(target={**LLAMA, "rope_parameters": {"rope_type": "linear", "factor": [2]}}), "rope_parameters"),
        (models(target={**LLAMA, "rope_parameters": {"rope_type": "linear", "factor": 1e308}}), "rope_parameters"),
        (
            models(target={**LLAMA, "text_config": {"rope_parameters": {"rope_type": "yarn", "factor": "4"}}}),
            "rope_parameters",
        ),
        (models(target={**LLAMA, "rope_parameters": "linear"}), "rope_parameters"),
    ],
)
def test_model_config_values_of_the_wrong_type_are_exit_3_naming_the_field(tmp_path, files, fragment):
    result = outcome_of(tmp_path, files=files)
    assert result.code == 3 and fragment in result.stderr, result.stderr


@pytest.mark.parametrize(
    "env,fragment",
    [
        ({"NIM_TUNED_FOR": DEEP}, "NIM_TUNED_FOR"),
        ({"NIM_TUNED_FOR": '{"vllm": "0.32.0", "vllm": "0.33.0", "runner": "v1", "platform": "cpu"}'}, "twice"),
        ({"NIM_BUILTIN_CONFIG_DIR": "/" + "d" * 300 + "/x"}, "NIM_BUILTIN_CONFIG_DIR"),
        ({"NIM_BUILTIN_CONFIG_DIR": "/x" * 2100}, "NIM_BUILTIN_CONFIG_DIR"),
    ],
)
def test_variables_nested_deep_or_naming_over_long_paths_are_exit_2(tmp_path, env, fragment):
    result = outcome_of(tmp_path, env)
    assert result.code == 2 and fragment in result.stderr, result.stderr


@pytest.mark.parametrize(
    "text,expected",
    [("file:///models/t", "/models/t"), ("file://localhost/models/t", "/models/t"), ("file:/models/t", "/models/t")],
)
def test_file_uris_are_read_as_rfc_8089_says(text, expected):
    assert parse_source(text, "NIM_MODEL_PATH").location == expected


def test_a_file_uri_on_another_host_is_refused():
    with pytest.raises(ConfigError, match="another host"):
        parse_source("file://server/models/t", "NIM_MODEL_PATH")


# ----- the lab's records and inputs


def _records(tmp_path, data: bytes):
    from nim_specdec_lab.ngram.http_replay import load_records

    path = tmp_path / "r.jsonl"
    path.write_bytes(data)
    return load_records(str(path))


GOOD_ROW = {"prompt_token_ids": [1, 2], "output_token_ids": [3]}


@pytest.mark.parametrize(
    "data,fragment",
    [
        (json.dumps(GOOD_ROW).encode() + b"\n\xff\xfe\n", "UTF-8"),
        (json.dumps({**GOOD_ROW, "max_model_len": True}).encode(), "max_model_len"),
        (json.dumps({**GOOD_ROW, "max_model_len": -5}).encode(), "max_model_len"),
        (json.dumps({**GOOD_ROW, "max_model_len": 1.5}).encode(), "max_model_len"),
        (b'{"prompt_token_ids": [1], "prompt_token_ids": [2], "output_token_ids": [3]}', "line 1"),
    ],
)
def test_records_with_bytes_that_are_not_utf8_or_bad_numbers_are_one_configuration_error(tmp_path, data, fragment):
    with pytest.raises(ConfigError) as err:
        _records(tmp_path, data)
    assert fragment in err.value.one_line() and "--records" in err.value.one_line()


@pytest.mark.parametrize("where", ["current", "env"])
def test_deeply_nested_current_or_specdec_args_in_simulate_is_a_configuration_error(where):
    from nim_specdec_lab.simulation.inputs import current_setting

    text = '{"speculative_config": ' + "[" * 5000 + "]" * 5000 + "}"
    with pytest.raises(ConfigError):
        current_setting(text if where == "current" else None, text if where == "env" else None)


# ----- the cache's markers


def _entry_with_marker(tmp_path, document: dict) -> None:
    layout = cache.CacheLayout.under(tmp_path / "cache")
    for d in (tmp_path / "cache", layout.root, layout.root / "entries"):
        d.mkdir(mode=0o700, exist_ok=True)
    name = cache.entry_name(parse_source("s3://b/m", "X"))
    (layout.entry(name) / cache.FILES).mkdir(parents=True, mode=0o700)
    (layout.entry(name) / cache.FILES / "config.json").write_bytes(b"{}")
    layout.marker(name).write_text(json.dumps(document))
    os.chmod(layout.marker(name), 0o600)


@pytest.mark.parametrize(
    "size,files",
    [(10**400, [{"path": "config.json", "size": 2}]), (2**70, [{"path": "config.json", "size": 2**70}]), (7, [])],
)
def test_cache_ls_on_a_marker_with_an_impossible_size_is_not_an_internal_error(
    tmp_path, monkeypatch, capsys, size, files
):
    document = {
        "complete": True,
        "uri": "s3://b/m",
        "files": files,
        "size": size,
        "completed_at": "2026-01-01T00:00:00Z",
    }
    _entry_with_marker(tmp_path, document)
    monkeypatch.setenv("NIM_CACHE_PATH", str(tmp_path / "cache"))
    code = main(["cache", "ls"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "incomplete" in out.out, out.out  # a marker that lies is no marker
    assert (
        cache.read_marker(
            cache.CacheLayout.under(tmp_path / "cache").marker(cache.entry_name(parse_source("s3://b/m", "X")))
        )
        is None
    )


# ----- safetensors headers and the index


def _header(tensors: dict) -> bytes:
    raw = json.dumps(tensors).encode()
    return struct.pack("<Q", len(raw)) + raw


def test_a_header_whose_offsets_run_past_the_end_of_its_file_is_refused(tmp_path):
    from nim_specdec.preflight.safetensors_header import HeaderError, read_header

    path = tmp_path / "model.safetensors"
    path.write_bytes(_header({"w": {"dtype": "BF16", "shape": [2**29, 2**30], "data_offsets": [0, 2**60]}}) + b"x" * 8)
    with pytest.raises(HeaderError, match="past the end"):
        read_header(path)


def test_header_bytes_summed_over_all_files_are_bounded(tmp_path, monkeypatch):
    from nim_specdec.preflight import checkpoint, safetensors_header
    from nim_specdec.preflight.safetensors_header import HeaderError

    monkeypatch.setattr(safetensors_header, "MAX_TOTAL_HEADER_BYTES", 4096)
    pad = "p" * 900
    for i in range(8):
        (tmp_path / f"m-{i}.safetensors").write_bytes(
            _header({"__metadata__": {"pad": pad}, f"w{i}": {"dtype": "BF16", "shape": [1], "data_offsets": [0, 2]}})
            + b"ab"
        )
    with pytest.raises(HeaderError, match="headers"):
        checkpoint.read_checkpoint(tmp_path)


def test_an_index_stating_more_bytes_than_its_shards_hold_is_refused(tmp_path):
    from nim_specdec.preflight.shell import _target_weight_bytes

    (tmp_path / "m-1.safetensors").write_bytes(
        _header({"w": {"dtype": "BF16", "shape": [1], "data_offsets": [0, 2]}}) + b"ab"
    )
    index = {"metadata": {"total_size": 2**59}, "weight_map": {"w": "m-1.safetensors"}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(MaterializeError, match="total_size"):
        _target_weight_bytes(str(tmp_path))


# ----- Prometheus text


@pytest.mark.parametrize(
    "text",
    [
        'vllm:spec_decode_num_drafts_total{model_name="m"} 1\n# TYPE\n',
        "# HELP\n",
        'x{a="\n',
        "x_total{" + 'a="b",' * 3 + "} 1e99999\n",
        "\x00\xff junk {{{ }}}\n",
        "x_total 1 2 3 4\n",
        '# TYPE x counter\nx_total{model_name="m"} NaN\n',
    ],
)
def test_report_on_any_prometheus_text_is_never_an_internal_error(tmp_path, capsys, text):
    path = tmp_path / "since.prom"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    from nim_specdec.cli.cmd_report import _parse_prometheus

    try:
        _parse_prometheus(text, "--since")
    except ConfigError as err:
        assert "--since" in err.one_line()


def test_a_dotted_speculative_value_nested_deep_is_a_configuration_error(tmp_path):
    result = outcome_of(tmp_path, args=["--speculative-config.x", "[" * 100000 + "]" * 100000])
    assert result.code == 2 and "--speculative-config" in result.stderr, result.stderr


def test_the_endpoints_read_a_deep_speculative_config_without_recursing(monkeypatch):
    import sys

    from nim_specdec.server.spec_info import shown_speculative_config

    monkeypatch.setattr(sys, "argv", ["api_server", "--speculative-config", "[" * 100000 + "]" * 100000])
    # Read as text that is no config (vLLM itself refuses it), never a RecursionError inside the server.
    assert shown_speculative_config(sys.argv, {}) == {}
