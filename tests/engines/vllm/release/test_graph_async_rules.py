"""The two GPU-path rules the runner differential found missing, table-driven: the CUDA graph mode V2's DBO
check reads after vLLM drops piecewise graphs from a model not compiled piecewise, and async scheduling asked
on where a release refuses it on a runner."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from nim_specdec.engines.vllm.release.async_rules import async_refusal
from nim_specdec.engines.vllm.release.graph_modes import compilation_mode, cudagraph_mode_checked
from nim_specdec.engines.vllm.release.runner_choice import choose_model_runner, runner_inputs
from nim_specdec.errors import ConfigError
from vllm_release_source import source


@pytest.mark.parametrize(
    "view, mode, checked",
    [
        ({}, "VLLM_COMPILE", "FULL_AND_PIECEWISE"),
        ({"O": 1}, "VLLM_COMPILE", "PIECEWISE"),
        ({"O0": True}, "NONE", "NONE"),
        ({"optimization_level": "0", "cc.cudagraph_mode": "PIECEWISE"}, "NONE", "NONE"),
        ({"compilation_config": {"mode": 1, "cudagraph_mode": "PIECEWISE"}}, "STOCK_TORCH_COMPILE", "NONE"),
        ({"cc.mode": "none"}, "NONE", "FULL_DECODE_ONLY"),
        ({"cc.mode": "DYNAMO_TRACE_ONCE", "cc.cudagraph_mode": "piecewise"}, "DYNAMO_TRACE_ONCE", "NONE"),
        ({"cc.mode": "3", "O0": True, "cc.cudagraph_mode": "PIECEWISE"}, "VLLM_COMPILE", "PIECEWISE"),
        ({"cc.mode": "0", "cc.cudagraph_mode": "FULL"}, "NONE", "FULL"),
        ({"enforce_eager": True, "cc.mode": "3"}, "NONE", "NONE"),
    ],
)
def test_piecewise_graphs_need_piecewise_compilation(view, mode, checked):
    assert (compilation_mode(view), cudagraph_mode_checked(view)) == (mode, checked)


@pytest.mark.parametrize(
    "view, runner",
    [
        ({"enable_dbo": True, "O": 1}, None),  # PIECEWISE compiled: V2 refuses DBO with it
        ({"enable_dbo": True, "O0": True, "cc.cudagraph_mode": "PIECEWISE"}, "v2"),
        ({"ubatch_size": 2, "cc.mode": "NONE", "cc.cudagraph_mode": "PIECEWISE"}, "v2"),
        ({"enable_dbo": True, "cc.cudagraph_mode": "FULL"}, "v2"),
    ],
)
def test_dbo_under_variable_1_follows_the_checked_graph_mode(view, runner):
    inputs = runner_inputs(view, None, None)
    if runner is None:
        with pytest.raises(ConfigError, match="PIECEWISE CUDA graphs"):
            choose_model_runner("0.32.0", "cuda", inputs, True)
    else:
        assert choose_model_runner("0.32.0", "cuda", inputs, True).runner == runner


@pytest.mark.parametrize(
    "release, platform, runner, method, padded_off, pp, refused",
    [
        ((0, 32), "cuda", "v2", None, False, 2, None),
        ((0, 32), "cuda", "v2", "ngram", False, 1, "'ngram'"),  # 0.32: either runner
        ((0, 33), "cuda", "v2", "ngram", False, 1, None),  # 0.33: V1 only
        ((0, 33), "cuda", "v1", "ngram", False, 1, "'ngram'"),
        ((0, 32), "cpu", "v1", "suffix", False, 1, "'suffix'"),  # before the CPU platform's hook
        ((0, 32), "cuda", "v2", "eagle3", False, 1, None),
        ((0, 32), "cuda", "v2", "deepseek_mtp", False, 1, None),
        ((0, 32), "cuda", "v2", "eagle3", True, 1, "disable_padded_drafter_batch"),
        ((0, 33), "cuda", "v2", "eagle3", True, 1, None),
        ((0, 32), "cuda", "v1", None, False, 2, "pipeline parallelism"),
        ((0, 32), "cpu", "v1", None, False, 2, None),  # the CPU hook turns async off before V1's check
        ((0, 33), "cpu", "v1", None, False, 2, "pipeline parallelism"),
    ],
)
def test_async_scheduling_refusals(release, platform, runner, method, padded_off, pp, refused):
    found = async_refusal(release, platform, runner, method, padded_off, pp)
    assert (found is None) if refused is None else (refused in found)


def test_async_refusal_names_the_option_and_runner():
    inputs = runner_inputs({"async_scheduling": True, "pipeline_parallel_size": 2}, None, None)
    with pytest.raises(ConfigError) as err:
        choose_model_runner("0.32.0", "cuda", inputs, False)
    assert err.value.where == "--async-scheduling" and "V1 model runner" in err.value.problem and err.value.fix
    asked_off = runner_inputs({"async_scheduling": False, "pipeline_parallel_size": 2}, None, None)
    assert choose_model_runner("0.32.0", "cuda", asked_off, False).runner == "v1"


def _release_rules():
    """Each release's own statements that settle async scheduling (tests/lab/tune/engines/test_async_rule_vllm.py
    runs them)."""
    sys.path.insert(0, str(Path(__file__).parents[3] / "lab" / "tune" / "engines"))
    from test_async_rule_vllm import RELEASES, V2_ONLY, _decision, _vllm_says  # noqa: PLC0415

    return RELEASES, V2_ONLY, _decision, _vllm_says


@pytest.mark.parametrize("runner", ["v1", "v2"])
@pytest.mark.parametrize("pp", [1, 2])
@pytest.mark.parametrize("padded_off", [False, True])
def test_async_refusal_is_each_releases(runner, pp, padded_off):
    """async_refusal against each release's own __post_init__ block with async scheduling asked on, for every
    method each release knows; 0.32's V1 refusal of pipeline parallelism sits in its V1 runner check instead.
    0.34 has neither a V1 runner nor disable_padded_drafter_batch: only V2 without it is asked of it."""
    releases, v2_only, decision, vllm_says = _release_rules()
    for version in releases:
        release = tuple(int(part) for part in version.split(".")[:2])
        if version in v2_only:
            if runner == "v2" and not padded_off:
                for method in (None, *decision(version)[1]):
                    assert vllm_says(version, runner, method, pp, True, False) is True, (version, method)
                    assert async_refusal(release, "cuda", runner, method, False, pp) is None, (version, method)
            continue
        v1_check = source(version, "vllm/config/vllm.py").split("def _get_v1_model_runner_unsupported_features")[1]
        assert "pipeline parallelism with async scheduling" in v1_check.split("\n    def ")[0]
        for method in (None, *decision(version)[1]):
            refused = vllm_says(version, runner, method, pp, True, padded_off) == "refused"
            refused = refused or (runner == "v1" and pp > 1)  # the V1 runner check, on a GPU
            found = async_refusal(release, "cuda", runner, method, padded_off, pp)
            assert (found is not None) is refused, (version, runner, method, pp, padded_off, found)
