"""vLLM's own variables are read by vLLM's package from the installation's environment, not by the settings: the
planner and the engine protocol never see them."""

from __future__ import annotations

import dataclasses

import pytest

from nim_specdec.config.settings import Settings
from nim_specdec.engines.protocol.engine import CommandRequest, Installation
from nim_specdec.engines.vllm.engine import VllmEngine
from nim_specdec.engines.vllm.release.host_vars import VllmHost, read_vllm_host
from nim_specdec.errors import ConfigError
from nim_specdec.plan.plan_input import PlannerInput


@pytest.mark.parametrize("value, on", [("1", True), ("0", False), ("true", False), (" 1", False), (None, False)])
def test_the_arctic_switch_is_read_as_the_plugin_reads_it(value, on):
    env = {} if value is None else {"ARCTIC_INFERENCE_ENABLED": value}
    assert read_vllm_host(env).arctic_plugin is on


def test_the_engine_reads_its_variables_from_its_installation():
    env = {
        "LD_PRELOAD": "/lib/x.so",
        "TRITON_CACHE_DIR": "/t",
        "VLLM_CACHE_ROOT": "/v",
        "VLLM_USE_V2_MODEL_RUNNER": "0",
    }
    engine = VllmEngine(Installation("vllm", "0.33.0", environ=env))
    assert engine.host == VllmHost(False, False, True, ("TRITON_CACHE_DIR", "VLLM_CACHE_ROOT"))
    assert VllmEngine(Installation("vllm", "0.33.0")).host == VllmHost()


def test_a_bad_runner_value_is_refused_in_one_line():
    with pytest.raises(ConfigError, match="VLLM_USE_V2_MODEL_RUNNER: invalid value 'on'"):
        VllmEngine(Installation("vllm", "0.33.0", environ={"VLLM_USE_V2_MODEL_RUNNER": "on"}))


@pytest.mark.parametrize("holder", [Settings, PlannerInput, CommandRequest])
def test_no_neutral_value_names_them(holder):
    assert not {f.name for f in dataclasses.fields(holder)} & {f.name for f in dataclasses.fields(VllmHost)}
