"""What tune records about the engine it measured on and the engine that will serve, rule by rule, without a
server: the log lines vLLM writes, the plan's fallbacks and their sources, the device, the serving runner, the
schedule fallback, the differences said in words and the top of tune.md."""

from __future__ import annotations

import json

import pytest

from nim_specdec.engines.vllm.release.runner_choice import RunnerInputs
from nim_specdec.errors import ConfigError
from nim_specdec_lab.tune.engines.device import cpu_device, describe_device
from nim_specdec_lab.tune.engines.engine import (
    LOG,
    PLAN,
    RULE,
    PlannedEngine,
    ServingEngine,
    async_scheduling,
    engine_record,
    planned_engine,
    serving_engine,
)
from nim_specdec_lab.tune.engines.engine_log import LoggedEngine, read_engine_log
from nim_specdec_lab.tune.engines.measured import engine_summary, serving_vllm_version
from nim_specdec_lab.tune.engines.serving import best_static, engine_differences, without_dropped_schedule
from nim_specdec_lab.tune.model.acceptance import curve_from_simulation
from nim_specdec_lab.tune.model.choice import choose, plan_method, static_prediction
from nim_specdec_lab.tune.model.cost_model import CostModel, MethodCost
from nim_specdec_lab.tune.reporting.engine_report import engine_lines

ENGINE_LINE = (
    "(EngineCore pid=1) INFO 12-02 17:27:17 [core.py:133] Initializing a V1 LLM engine (v{v}) with config: "
    "model='/m', speculative_config=None, device_config={d}, seed=0, compilation_config={{'mode': "
    "<CompilationMode.NONE: 0>, 'cudagraph_mode': <CUDAGraphMode.{g}: 2>, 'cudagraph_num_of_warmups': 0}}"
)
V1_NO_TRITON = (
    "(EngineCore pid=1) WARNING [vllm.py:725] Model Runner V2 requires Triton; using the V1 model runner instead."
)
V1_UNSUPPORTED = (
    "WARNING [vllm.py:733] Model Runner V2 does not yet support speculative method 'suffix'; using the "
    "V1 model runner instead."
)
V2 = "(VllmWorker-0 pid=2) INFO [gpu_worker.py:518] Using V2 Model Runner"
ASYNC_OFF = (
    "WARNING [vllm.py:1606] Async scheduling not supported with ngram-based speculative decoding and will be disabled."
)

LOGS = [
    (
        "cpu-v1",
        [ENGINE_LINE.format(v="0.32.0", d="cpu", g="NONE"), V1_NO_TRITON],
        LoggedEngine("0.32.0", "cpu", "NONE", "v1", None),
    ),
    (
        "cuda-v2",
        [ENGINE_LINE.format(v="0.32.0", d="cuda", g="FULL_AND_PIECEWISE"), V2],
        LoggedEngine("0.32.0", "cuda", "FULL_AND_PIECEWISE", "v2", None),
    ),
    (
        "cuda-v1-suffix-async-off",
        [V1_UNSUPPORTED, ASYNC_OFF, ENGINE_LINE.format(v="0.33.1", d="cuda", g="PIECEWISE")],
        LoggedEngine("0.33.1", "cuda", "PIECEWISE", "v1", False),
    ),
    (
        "cuda-033-v1-ngram-async-off",  # vLLM 0.33's wording (config/vllm.py)
        [
            "WARNING [vllm.py:1712] Async scheduling is disabled because the V1 model runner does not support it "
            "with ngram-based speculative decoding.",
            ENGINE_LINE.format(v="0.33.0", d="cuda", g="FULL_AND_PIECEWISE"),
        ],
        LoggedEngine("0.33.0", "cuda", "FULL_AND_PIECEWISE", None, False),
    ),
    (
        "runner-forced-by-variable-says-nothing",
        [ENGINE_LINE.format(v="0.32.0", d="cuda", g="FULL")],
        LoggedEngine("0.32.0", "cuda", "FULL", None, None),
    ),
    ("launcher-lines-only", ["INFO nim-specdec: exec: python -m vllm.entrypoints.openai.api_server"], LoggedEngine()),
]


@pytest.mark.parametrize("lines,expected", [c[1:] for c in LOGS], ids=[c[0] for c in LOGS])
def test_read_engine_log(lines, expected):
    assert read_engine_log("\n".join(lines)) == expected


CPUINFO = [
    (
        "x86",
        "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel\t\t: 49\nmodel name\t: AMD EPYC 7B12\nprocessor\t: 1\n"
        "model name\t: AMD EPYC 7B12\n",
        "AMD EPYC 7B12",
    ),
    ("arm-board", "processor\t: 0\nBogoMIPS\t: 108.00\n\nHardware\t: BCM2835\nModel\t\t: Raspberry Pi 4\n", "BCM2835"),
    ("nothing", "processor\t: 0\n", None),
]


@pytest.mark.parametrize("text,expected", [c[1:] for c in CPUINFO], ids=[c[0] for c in CPUINFO])
def test_the_cpu_record_names_the_model_the_plan_reads(text, expected):
    assert cpu_device(text, 2)["cpu"] == (expected or "unknown")


def test_devices_in_one_line():
    gpu = {
        "kind": "gpu",
        "gpus": [{"name": "NVIDIA H200", "memory_gib": 139.8}] * 2,
        "driver": "570.86",
        "source": "nvml",
    }
    assert describe_device(gpu) == "2 x NVIDIA H200 (139.8 GiB each), driver 570.86"
    assert describe_device(cpu_device("model name\t: AMD EPYC 7B12\n", 16)) == "CPU AMD EPYC 7B12, 16 cores"
    assert cpu_device(None, None) == {"kind": "cpu", "cpu": "unknown", "cores": None, "source": "none"}


# (id, engine arguments, platform, runner, method, vLLM, async scheduling);
# tests/lab/tune/engines/test_async_rule_vllm.py runs the same rule against each release's own VllmConfig code.
ASYNC = [
    ("cpu-always-off", {"async_scheduling": True}, "cpu", "v1", "eagle3", "0.32.0", False),
    ("cuda-off-default", {}, "cuda", "v2", None, "0.32.0", True),
    ("cuda-asked-off", {"async_scheduling": False}, "cuda", "v2", "eagle3", "0.32.0", False),
    ("cuda-032-v2-ngram-off", {}, "cuda", "v2", "ngram", "0.32.0", False),
    ("cuda-033-v2-ngram-on", {}, "cuda", "v2", "ngram", "0.33.0", True),
    ("cuda-033-v1-ngram-off", {}, "cuda", "v1", "ngram", "0.33.0", False),
    ("cuda-suffix-off", {}, "cuda", "v1", "suffix", "0.33.0", False),
    ("cuda-eagle3-on", {}, "cuda", "v2", "eagle3", "0.32.0", True),
    ("cuda-mtp-on", {}, "cuda", "v2", "deepseek_mtp", "0.32.0", True),
    ("cuda-draft-model-on", {}, "cuda", "v1", "draft_model", "0.32.0", True),
    ("cuda-v1-pipeline-off", {"pipeline_parallel_size": 2}, "cuda", "v1", None, "0.33.0", False),
    ("cuda-v2-pipeline-on", {"pipeline_parallel_size": 2}, "cuda", "v2", None, "0.32.0", True),
]


@pytest.mark.parametrize(
    "view,platform,runner,method,version,expected", [c[1:] for c in ASYNC], ids=[c[0] for c in ASYNC]
)
def test_async_scheduling(view, platform, runner, method, version, expected):
    assert async_scheduling(view, platform, runner, method, version) is expected


def _shown(platform="cpu", runner="v1", downgrade=None, view=None, method="ngram"):
    return {
        "model_runner": {
            "runner": runner,
            "reason": "r",
            "platform": platform,
            "vllm_version": "0.32.0",
            "cudagraph_downgrade": downgrade,
        },
        "engine_args": view or {},
        "speculative": {"enabled": method is not None, "method": method},
    }


PLANNED = [
    ("cpu-no-graphs", _shown(), PlannedEngine("0.32.0", "cpu", "v1", "NONE", False, "ngram")),
    (
        "cuda-default-level",
        _shown("cuda", "v2", method=None),
        PlannedEngine("0.32.0", "cuda", "v2", "FULL_AND_PIECEWISE", True, None),
    ),
    (
        "cuda-eager",
        _shown("cuda", "v2", view={"enforce_eager": True}, method="eagle3"),
        PlannedEngine("0.32.0", "cuda", "v2", "NONE", True, "eagle3"),
    ),
    (
        "cuda-schedule-downgrade",
        _shown("cuda", "v1", "FULL_AND_PIECEWISE -> PIECEWISE", method="suffix"),
        PlannedEngine("0.32.0", "cuda", "v1", "PIECEWISE", False, "suffix", "FULL_AND_PIECEWISE -> PIECEWISE"),
    ),
]


@pytest.mark.parametrize("shown,expected", [c[1:] for c in PLANNED], ids=[c[0] for c in PLANNED])
def test_planned_engine(shown, expected):
    assert planned_engine(shown) == expected


def test_the_log_wins_where_it_speaks_and_each_value_names_its_source():
    planned = PlannedEngine("0.32.0", "cuda", "v2", "FULL_AND_PIECEWISE", True, "ngram")
    logged = LoggedEngine("0.32.1", "cuda", "PIECEWISE", None, False)
    record = engine_record(logged, planned, {"kind": "cpu", "cpu": "x", "cores": 2, "source": "/proc/cpuinfo"})
    assert (record["vllm_version"], record["runner"], record["cudagraph_mode"], record["async_scheduling"]) == (
        "0.32.1",
        "v2",
        "PIECEWISE",
        False,
    )
    assert record["sources"] == {
        "device": "/proc/cpuinfo",
        "vllm_version": LOG,
        "platform": LOG,
        "runner": PLAN,
        "cudagraph_mode": LOG,
        "async_scheduling": LOG,
    }
    silent = engine_record(LoggedEngine(), planned, {"source": "nvml"})
    assert silent["async_scheduling"] is True and silent["sources"]["async_scheduling"] == RULE
    assert silent["sources"]["vllm_version"] == PLAN and silent["vllm_version"] == "0.32.0"


SCHEDULE = [[1, 1, 3], [2, 8, 1]]
# (id, version, platform, inputs, VLLM_USE_V2_MODEL_RUNNER, runner, dropped, downgrade)
SERVING = [
    ("cpu-ngram-v1", "0.32.0", "cpu", RunnerInputs(method="ngram", schedule=True), None, "v1", False, None),
    (
        "cuda-ngram-v2-keeps-graphs",
        "0.32.0",
        "cuda",
        RunnerInputs(method="ngram", schedule=True),
        None,
        "v2",
        False,
        None,
    ),
    (
        "cuda-ngram-forced-v1-downgrades",
        "0.32.0",
        "cuda",
        RunnerInputs(method="ngram", schedule=True),
        False,
        "v1",
        False,
        "FULL_AND_PIECEWISE -> PIECEWISE",
    ),
    (
        "cuda-032-suffix-v1-downgrades",
        "0.32.0",
        "cuda",
        RunnerInputs(method="suffix", schedule=True),
        None,
        "v1",
        False,
        "FULL_AND_PIECEWISE -> PIECEWISE",
    ),
    (
        "cuda-033-suffix-v1-dropped",
        "0.33.0",
        "cuda",
        RunnerInputs(method="suffix", schedule=True),
        None,
        "v1",
        True,
        None,
    ),
    (
        "cuda-dp2-dropped",
        "0.32.0",
        "cuda",
        RunnerInputs(method="eagle3", schedule=True, data_parallel=2),
        None,
        "v2",
        True,
        None,
    ),
    ("cuda-static-nothing-to-drop", "0.33.0", "cuda", RunnerInputs(method="suffix"), None, "v1", False, None),
    (
        "cuda-piecewise-given-no-downgrade",
        "0.32.0",
        "cuda",
        RunnerInputs(method="suffix", schedule=True, cudagraph_mode="PIECEWISE"),
        None,
        "v1",
        False,
        None,
    ),
]


@pytest.mark.parametrize(
    "version,platform,inputs,use_v2,runner,dropped,downgrade", [c[1:] for c in SERVING], ids=[c[0] for c in SERVING]
)
def test_serving_engine(version, platform, inputs, use_v2, runner, dropped, downgrade):
    serving = serving_engine(version, platform, inputs, use_v2)
    assert (serving.runner, serving.drop is not None, serving.cudagraph_downgrade) == (runner, dropped, downgrade)
    assert serving.vllm_version == version and serving.platform == platform


def test_a_serving_engine_vllm_would_refuse_stops_tune():
    with pytest.raises(ConfigError) as err:
        serving_engine("0.32.0", "cpu", RunnerInputs(method="ngram"), True)
    assert err.value.exit_code == 2 and "no Triton" in str(err.value)


@pytest.mark.parametrize("text", ["0.32", "0.32.0", "0.33.1+cu129", "0.34.0rc1"[:6]])
def test_serving_vllm_version_accepts_versions(text):
    assert serving_vllm_version(text) == text


@pytest.mark.parametrize("text", ["latest", "v0.32.0", "", "0", "0.32.0; rm"])
def test_serving_vllm_version_refuses_others(text):
    with pytest.raises(ConfigError) as err:
        serving_vllm_version(text)
    assert str(err.value).startswith("--serving-vllm-version:") and err.value.exit_code == 2


# Cost models under which n-gram's best K falls with the batch size (a schedule): one where a static K still
# beats off (K = 3 at 1, 1 at 8), one where only the schedule does (K = 1 at 1, 0 from 2 on).
SLOPED = CostModel(0.010, 0.002, {"ngram": MethodCost(0.0, 0.0010)})
COSTLY = CostModel(0.010, 0.002, {"ngram": MethodCost(0.0, 0.0030)})
CURVE = curve_from_simulation([(1, 1000, 150, 400), (2, 1000, 220, 700), (3, 1000, 260, 950)])
CONC = (1, 2, 4, 8)
DROP = serving_engine("0.32.0", "cuda", RunnerInputs(method="ngram", schedule=True, data_parallel=2), None)
KEEP = serving_engine("0.32.0", "cuda", RunnerInputs(method="ngram", schedule=True), None)


def test_best_static_is_the_k_with_the_best_mean_speedup():
    static = best_static(SLOPED, "ngram", CURVE, CONC)
    off = {c: SLOPED.tokens_per_s(c, None, None, 0) for c in CONC}
    means = {
        k: sum(p[c] / off[c] for c in CONC) / len(CONC)
        for k in (1, 2, 3)
        for p in [static_prediction(SLOPED, "ngram", CURVE, k, CONC)]
    }
    assert static is not None and set(static.k_by_batch) == {max(means, key=means.get)}
    assert static.score == pytest.approx(max(means.values())) and static.score > 1.0


def test_best_static_is_none_where_no_k_beats_off():
    assert best_static(COSTLY, "ngram", CURVE, CONC) is None


def test_a_schedule_the_serving_engine_drops_falls_back_to_the_best_static_k():
    choice = choose(SLOPED, {"ngram": CURVE}, CONC, margin=0.0)
    assert choice.chosen is not None and len(set(choice.chosen.k_by_batch)) > 1  # a schedule was chosen
    kept, note = without_dropped_schedule(choice, KEEP, SLOPED, CURVE, CONC)
    assert kept is choice and note is None
    fell, note = without_dropped_schedule(choice, DROP, SLOPED, CURVE, CONC)
    static = best_static(SLOPED, "ngram", CURVE, CONC)
    assert fell.chosen == static and len(set(fell.chosen.k_by_batch)) == 1 and fell.plans == choice.plans
    assert note.startswith("the serving engine would drop the K-per-batch-size schedule (vLLM 0.32.0 drops")
    assert f"recommending ngram at K = {static.k_by_batch[0]} at every batch size instead" in note
    assert "\n" not in note


def test_the_fallback_is_off_where_no_static_k_pays():
    choice = choose(COSTLY, {"ngram": CURVE}, CONC, margin=0.0)
    assert choice.chosen is not None and len(set(choice.chosen.k_by_batch)) > 1
    fell, note = without_dropped_schedule(choice, DROP, COSTLY, CURVE, CONC)
    assert fell.chosen is None and "recommending speculation off instead" in note


def test_a_static_choice_is_never_touched():
    static_plan = plan_method(CostModel(0.010, 0.002, {"ngram": MethodCost(0.0, 0.0001)}), "ngram", CURVE, CONC)
    assert len(set(static_plan.k_by_batch)) == 1
    choice = choose(CostModel(0.010, 0.002, {"ngram": MethodCost(0.0, 0.0001)}), {"ngram": CURVE}, CONC)
    assert without_dropped_schedule(choice, DROP, COSTLY, CURVE, CONC) == (choice, None)


CPU_V1 = {"vllm_version": "0.32.0", "platform": "cpu", "runner": "v1", "cudagraph_mode": "NONE", "method": "ngram"}
# (id, measured, serving, what each line must say, in order)
DIFFERENCES = [
    ("same-engine", CPU_V1, ServingEngine("0.32.0", "cpu", "v1", "r"), []),
    (
        "cpu-to-cuda-v2-ngram",
        CPU_V1,
        ServingEngine("0.32.0", "cuda", "v2", "r"),
        ["measured on cpu, to serve on cuda", "V2 serves ngram with its GPU proposer"],
    ),
    (
        "other-version",
        CPU_V1,
        ServingEngine("0.33.0", "cpu", "v1", "r"),
        ["measured with vLLM 0.32.0, to serve with vLLM 0.33.0"],
    ),
    (
        "v2-to-v1-ngram",
        {**CPU_V1, "platform": "cuda", "runner": "v2", "cudagraph_mode": "FULL_AND_PIECEWISE"},
        ServingEngine("0.32.0", "cuda", "v1", "r", cudagraph_downgrade="FULL_AND_PIECEWISE -> PIECEWISE"),
        ["V1 serves ngram with its CPU proposer", "runs CUDA graphs FULL_AND_PIECEWISE -> PIECEWISE"],
    ),
    (
        "downgrade-already-measured",
        {**CPU_V1, "platform": "cuda", "cudagraph_mode": "PIECEWISE", "method": "suffix"},
        ServingEngine("0.32.0", "cuda", "v1", "r", cudagraph_downgrade="FULL_AND_PIECEWISE -> PIECEWISE"),
        [],
    ),
    (
        "other-method-runner",
        {**CPU_V1, "method": "draft_model"},
        ServingEngine("0.32.0", "cpu", "v2", "r"),
        ["measured on the V1 model runner, to serve on V2: step costs"],
    ),
]


@pytest.mark.parametrize("measured,serving,expected", [c[1:] for c in DIFFERENCES], ids=[c[0] for c in DIFFERENCES])
def test_engine_differences(measured, serving, expected):
    lines = engine_differences(measured, serving)
    assert len(lines) == len(expected) and all(want in line for want, line in zip(expected, lines)), lines
    assert all("\n" not in line for line in lines)


def _server(name, method, **engine):
    record = {
        **CPU_V1,
        "method": method,
        "async_scheduling": False,
        "device": {"kind": "cpu", "cpu": "AMD EPYC 7B12", "cores": 2, "source": "/proc/cpuinfo"},
        "sources": {
            "device": "/proc/cpuinfo",
            "vllm_version": LOG,
            "platform": LOG,
            "runner": LOG,
            "cudagraph_mode": LOG,
            "async_scheduling": RULE,
        },
        **engine,
    }
    return {"name": name, "engine": record}


def test_the_summary_compares_the_server_of_the_recommended_method_and_marks_its_engine():
    servers = [_server("off", None), _server("ngram-k3", "ngram", runner="v2", platform="cuda")]
    summary, marker = engine_summary(servers, ServingEngine("0.32.0", "cuda", "v2", "r"), "ngram", None)
    assert summary["differences"] == [] and summary["measured_on"] == {
        "vllm": "0.32.0",
        "runner": "v2",
        "platform": "cuda",
        "device": "AMD EPYC 7B12",
    }
    assert marker == {
        "NIM_TUNED_FOR": '{"vllm": "0.32.0", "runner": "v2", "platform": "cuda", "device": "AMD EPYC 7B12"}'
    }
    off, off_marker = engine_summary(servers, ServingEngine("0.32.0", "cuda", "v2", "r"), None, "a note")
    assert len(off["differences"]) == 2 and off["schedule_fallback"] == "a note"
    assert json.loads(off_marker["NIM_TUNED_FOR"]) == {
        "vllm": "0.32.0",
        "runner": "v1",
        "platform": "cpu",
        "device": "AMD EPYC 7B12",
    }
    assert engine_summary([], ServingEngine("0.32.0", "cpu", "v1", "r"), None, None)[1] == {}


def test_tune_md_opens_with_what_each_server_ran_on():
    servers = [_server("off", None), _server("ngram-k3", "ngram")]
    summary, _ = engine_summary(servers, ServingEngine("0.32.0", "cuda", "v2", "V2 is the default"), "ngram", None)
    text = "\n".join(engine_lines({"servers": servers, "engine": summary}))
    assert text.startswith("## What this was measured on\n\nDevice: CPU AMD EPYC 7B12, 2 cores.")
    assert "| ngram-k3 | 0.32.0 | cpu | V1 | NONE | off |" in text
    assert (
        f"Sources: /proc/cpuinfo: device; {LOG}: vllm_version, platform, runner, cudagraph_mode; {RULE}: "
        "async_scheduling." in text
    )
    assert "Serving engine: vLLM 0.32.0 on cuda, V2 model runner (V2 is the default)." in text
    assert "- measured on cpu, to serve on cuda" in text
    same, _ = engine_summary(servers, ServingEngine("0.32.0", "cpu", "v1", "r"), "ngram", None)
    assert "the figures below apply to it" in "\n".join(engine_lines({"servers": servers, "engine": same}))
    assert engine_lines({"servers": [{"name": "off"}], "engine": None}) == []  # a result from before the records
