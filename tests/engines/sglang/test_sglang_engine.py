"""SglangEngine as the planner uses it (NIM_ENGINE=sglang through launch.resolve.plan_for, no SGLang run): what it
refuses in one line, naming the key, the value and the fix; the plan's sections vLLM's parts leave to vLLM; one
served name; the NIM variables' engine arguments as SGLang's options."""

from __future__ import annotations

import json

import pytest

from core_fixtures import facts
from nim_specdec.errors import ConfigError
from nim_specdec.launch.resolve import plan_for

EAGLE3 = '{"method": "eagle3", "model": "eagle3_draft", "num_speculative_tokens": 3}'


def _plan(models, env: dict[str, str], args: list[str]):
    env = {
        "NIM_CACHE_PATH": str(models["cache"]),
        "NIM_ENGINE": "sglang",
        "NIM_MODEL_PATH": str(models["target"]),
        "NIM_DRAFT_MODEL_PATH": str(models["draft"]),
        **env,
    }
    return plan_for(env, args, facts())[1]


def _refusal(models, env: dict[str, str], args: list[str]) -> str:
    with pytest.raises(ConfigError) as refused:
        _plan(models, env, args)
    line = refused.value.one_line()
    assert "\n" not in line
    return line


@pytest.mark.parametrize(
    ("env", "args", "expected"),
    [
        (  # a K schedule
            {},
            ["--speculative-config", json.dumps({**json.loads(EAGLE3), "num_speculative_tokens_per_batch_size": {}})],
            "--speculative-config.num_speculative_tokens_per_batch_size: SGLang 0.5 has no per-batch-size K schedule",
        ),
        (  # a method SGLang lacks
            {},
            ["--speculative-config", '{"method": "suffix", "num_speculative_tokens": 3}'],
            "--speculative-config.method: method 'suffix' has no SGLang 0.5 counterpart",
        ),
        (  # a key with no counterpart, named in the layer that gave it
            {"NIM_SPECDEC_ENABLE": "1", "NIM_SPECDEC_ARGS": json.dumps({"speculative_config": {"max_model_len": 9}})},
            [],
            "NIM_SPECDEC_ARGS.max_model_len: SGLang 0.5 has no counterpart for max_model_len=9",
        ),
        (  # no method: SGLang infers none from the draft's name
            {},
            ["--speculative-config", '{"model": "eagle3_draft", "num_speculative_tokens": 3}'],
            "speculative_config.method: is not set: SGLang does not infer the method",
        ),
        (  # an engine key of NIM_SPECDEC_ARGS SGLang has no option for
            {"NIM_SPECDEC_ENABLE": "1", "NIM_SPECDEC_ARGS": json.dumps({"max_num_seqs": 8})},
            [],
            "NIM_SPECDEC_ARGS: SGLang 0.5 has no option 'max_num_seqs'",
        ),
        (  # an argument SGLang's parser does not know
            {},
            ["--speculative-config", EAGLE3, "--max-num-seqs", "8"],
            "argument: SGLang has no option '--max-num-seqs'",
        ),
        (  # the capture middleware cannot be loaded into SGLang
            {"NIM_SPECDEC_ENABLE": "1", "NIM_CAPTURE_ENABLE": "1"},
            [],
            "NIM_CAPTURE_ENABLE: the payload capture is vLLM's --middleware, which SGLang 0.5's server cannot load",
        ),
    ],
    ids=["schedule", "method", "key", "no-method", "engine-key", "argument", "capture"],
)
def test_what_sglang_cannot_express_is_refused_in_one_line(models, env, args, expected):
    line = _refusal(models, env, args)
    assert line.startswith(expected), line
    assert "NIM_ENGINE=vllm" in line or "drop" in line or "set method" in line or "spell" in line or "check" in line


def test_the_plan_says_vllm_parts_are_not_used_and_which_engine(models):
    plan = _plan(models, {}, ["--speculative-config", EAGLE3])
    assert plan.engine.name == "sglang" and plan.engine.release == "0.5.23"
    for reason in (plan.model_runner.reason, plan.compile_cache.reason, plan.cpu_preload.reason):
        assert reason.startswith("not used by SGLang")
    assert plan.launch.env == {} and plan.cpu_preload.LD_PRELOAD is None
    assert "--middleware" not in plan.launch.argv
    assert plan.launch.argv[1:3] == ("-m", "sglang.launch_server")


def test_the_variables_as_sglang_options(models):
    env = {
        "NIM_SERVED_MODEL_NAME": "a",
        "NIM_MAX_MODEL_LEN": "4096",
        "NIM_TENSOR_PARALLEL_SIZE": "2",
        "NIM_SHUTDOWN_TIMEOUT": "30",
    }
    plan = _plan(models, env, ["--speculative-config", EAGLE3])
    argv = plan.launch.argv
    assert argv[argv.index("--served-model-name") + 1] == "a" and argv.count("--served-model-name") == 1
    assert argv[argv.index("--context-length") + 1] == "4096" and argv[argv.index("--tp-size") + 1] == "2"
    assert any(w.startswith("NIM_SHUTDOWN_TIMEOUT sets vLLM's shutdown_timeout") for w in plan.warnings)
    assert plan.target.served_model_names == ("a",)


def test_the_users_sglang_arguments_win_each_replacement_a_warning(models):
    plan = _plan(
        models, {}, ["--speculative-config", EAGLE3, "--speculative-num-steps=5", "--mem-fraction-static", "0.8"]
    )
    argv = plan.launch.argv
    assert (
        argv[argv.index("--speculative-num-steps") + 1] == "5"
        and "3" not in argv[argv.index("--speculative-num-steps") :][:2]
    )
    assert "--speculative-num-steps 5 given wins over 3 from the speculative config" in plan.warnings
    assert plan.engine_args["mem_fraction_static"] == "0.8"
    assert plan.engine_origin["mem_fraction_static"] == "cli"
