"""NIM_ENGINE: the engine planned for and served with, parsed once into Settings.engine."""

from __future__ import annotations

import pytest

from nim_specdec.config.settings import parse_settings
from nim_specdec.errors import EXIT_CONFIG, ConfigError


@pytest.mark.parametrize(
    ("value", "engine"), [(None, "vllm"), ("", "vllm"), ("vllm", "vllm"), ("sglang", "sglang"), (" SGLang ", "sglang")]
)
def test_the_engine_is_a_typed_choice(value, engine):
    env = {} if value is None else {"NIM_ENGINE": value}
    assert parse_settings(env).engine == engine


@pytest.mark.parametrize("value", ["trtllm", "tensorrt_llm", "sglang-0.5", "vllm,sglang"])
def test_any_other_engine_is_refused_in_one_line(value):
    with pytest.raises(ConfigError) as caught:
        parse_settings({"NIM_ENGINE": value})
    assert str(caught.value) == f"NIM_ENGINE: invalid value {value!r}; use one of: vllm, sglang"
    assert caught.value.exit_code == EXIT_CONFIG
