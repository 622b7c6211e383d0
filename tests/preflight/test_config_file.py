"""read_model_config: a config.json as Python's json module writes it (NaN, Infinity) is read as transformers and vLLM
read it, while every other limit of the strict reader holds and the figures the launcher computes with stay finite.
The other JSON the launcher reads (a safetensors index, the variables) keeps refusing NaN and Infinity."""

from __future__ import annotations

import json
import math

import pytest

from nim_specdec.config.jsonvalue import loads
from nim_specdec.errors import ConfigError, MaterializeError
from nim_specdec.preflight.config_file import MAX_CONFIG_BYTES, index_shards, read_model_config
from nim_specdec.preflight.safetensors_header import HeaderError

NEMOTRON_H = {"architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h", "hidden_size": 64}


def _folder(tmp_path, text: str):
    (tmp_path / "config.json").write_text(text)
    return tmp_path


@pytest.mark.parametrize(
    "key,value",
    [
        ("time_step_limit", [0.0, math.inf]),  # Nemotron-H's transformers default, as save_pretrained writes it
        ("time_step_limit", [-math.inf, 0.0]),
        ("initializer_range", math.nan),
        ("text_config", {"time_step_limit": [0.0, math.inf]}),
    ],
)
def test_what_pythons_json_writes_is_read_as_python_reads_it(tmp_path, key, value):
    text = json.dumps({**NEMOTRON_H, key: value})  # json.dumps writes Infinity, -Infinity and NaN
    assert "Infinity" in text or "NaN" in text
    found = read_model_config(_folder(tmp_path, text), "model")
    assert json.dumps(found[key]) == json.dumps(value)
    assert found == {**NEMOTRON_H, key: found[key]}


@pytest.mark.parametrize(
    "fields,named",
    [
        ('"hidden_size": Infinity', "hidden_size"),
        ('"num_hidden_layers": NaN', "num_hidden_layers"),
        ('"max_position_embeddings": -Infinity', "max_position_embeddings"),
        ('"text_config": {"vocab_size": NaN}', "text_config.vocab_size"),
        ('"rope_parameters": {"rope_type": "linear", "factor": Infinity}', "rope_parameters.factor"),
        ('"rope_scaling": {"rope_type": "dynamic", "factor": NaN}', "rope_scaling.factor"),
        ('"rope_parameters": {"full_attention": {"factor": NaN}}', "rope_parameters.full_attention.factor"),
    ],
)
def test_a_non_finite_figure_the_launcher_computes_with_is_exit_3_naming_it(tmp_path, fields, named):
    with pytest.raises(MaterializeError) as caught:
        read_model_config(_folder(tmp_path, '{"model_type": "llama", ' + fields + "}"), "target model")
    assert f"config.json: {named} " in caught.value.problem


@pytest.mark.parametrize(
    "text,problem",
    [
        ('{"hidden_size": 1e999}', "out of range"),  # not what Python writes: it reads as inf, so it is a forgery
        ('{"hidden_size": ' + "9" * 65 + "}", "too large"),
        ('{"a": 1, "a": 2}', "given twice"),
        ('{"a": ' + "[" * 65 + "]" * 65 + "}", "nested more than 64 levels"),
        ('{"a": Infinit}', "invalid JSON"),
        ('{"a": nan}', "invalid JSON"),  # Python's spelling only
        ('{"a": inf}', "invalid JSON"),
    ],
)
def test_every_other_limit_of_the_strict_reader_holds(tmp_path, text, problem):
    with pytest.raises(MaterializeError) as caught:
        read_model_config(_folder(tmp_path, text), "target model")
    assert problem in caught.value.problem and "config.json" in caught.value.problem


def test_a_config_larger_than_the_limit_is_refused_before_it_is_parsed(tmp_path):
    with open(tmp_path / "config.json", "wb") as fh:
        fh.truncate(MAX_CONFIG_BYTES + 1)  # sparse: a parse would fail differently (NUL bytes)
    with pytest.raises(MaterializeError) as caught:
        read_model_config(tmp_path, "target model")
    assert "is larger than" in caught.value.problem


def test_the_safetensors_index_and_the_variables_stay_strict(tmp_path):
    index = {"metadata": {"total_size": math.inf}, "weight_map": {"w": "model.safetensors"}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(HeaderError, match="Infinity is not a JSON number"):
        index_shards(tmp_path, "target model")
    with pytest.raises(ConfigError, match="Infinity is not a JSON number"):
        loads('{"speculative_config": {"suffix_decoding_max_spec_factor": Infinity}}', "NIM_SPECDEC_ARGS")
