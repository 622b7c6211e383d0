"""The replay engine's pure parts: checking a spec, the wire bodies, the trace file, AIPerf's arguments,
the measurement from AIPerf's export and two scrapes, and the server's speculative config from its argv."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nim_specdec.errors import ConfigError
from nim_specdec.server.spec_info import speculative_config_from_argv
from nim_specdec_lab.replay.aiperf_run import MMAP_BASE_VAR, aiperf_env, find_aiperf
from nim_specdec_lab.replay.results import measurement, spec_config_from_metrics
from nim_specdec_lab.replay.spec import ReplayMeasurement, ReplaySpec, aiperf_argv, check, trace_text, wire_body

CHAT = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 10, "stream": False, "model": "captured"}
PROMPT = {"prompt": "hi", "max_completion_tokens": 5}


def spec(**kw) -> ReplaySpec:
    return ReplaySpec(**{"url": "http://127.0.0.1:9", "model": "served", "requests": (CHAT,), **kw})


@pytest.mark.parametrize(
    "kw, where",
    [
        ({"url": "127.0.0.1:9"}, "--url"),
        ({"model": ""}, "--model"),
        ({"requests": ()}, "replay"),
        ({"concurrency": 0}, "--concurrency"),
        ({"schedule": "poisson"}, "--schedule"),
        ({"schedule": "timestamps"}, "--schedule"),
        ({"schedule": "timestamps", "timestamps_ms": (1, 2)}, "--schedule"),
        ({"schedule": "timestamps", "timestamps_ms": (1,), "request_count": 3}, "--request-count"),
        ({"request_count": 0}, "--request-count"),
        ({"max_tokens": 0}, "--max-tokens"),
        ({"requests": (CHAT, PROMPT)}, "replay"),
        ({"requests": ({"input": "x"},)}, "replay"),
    ],
)
def test_check_refuses(kw, where):
    with pytest.raises(ConfigError) as err:
        check(spec(**kw))
    assert err.value.where == where


@pytest.mark.parametrize("requests, endpoint", [((CHAT,), "chat"), ((PROMPT, PROMPT), "completions")])
def test_check_names_the_endpoint(requests, endpoint):
    assert check(spec(requests=requests)) == endpoint


@pytest.mark.parametrize(
    "kw, body, expected",
    [
        ({}, CHAT, {"messages": CHAT["messages"], "max_tokens": 10}),
        (
            {"greedy": True},
            {**CHAT, "temperature": 0.8},
            {"messages": CHAT["messages"], "max_tokens": 10, "temperature": 0},
        ),
        ({"max_tokens": 3}, PROMPT, {"prompt": "hi", "max_tokens": 3}),
        ({"ignore_eos": True}, PROMPT, {"prompt": "hi", "max_completion_tokens": 5, "ignore_eos": True}),
    ],
)
def test_wire_body_streams_with_usage_for_the_served_model(kw, body, expected):
    sent = wire_body(body, spec(**kw))
    assert sent == {**expected, "model": "served", "stream": True, "stream_options": {"include_usage": True}}


def test_trace_keeps_timestamps_only_when_the_schedule_uses_them():
    two = (CHAT, PROMPT | {"messages": []})
    closed = [json.loads(line) for line in trace_text(spec(requests=two, timestamps_ms=(500, 2500))).splitlines()]
    timed = [
        json.loads(line)
        for line in trace_text(spec(requests=two, schedule="timestamps", timestamps_ms=(500, 2500))).splitlines()
    ]
    assert [set(line) for line in closed] == [{"session_id", "payload"}, {"session_id", "payload"}]
    assert [line["timestamp"] for line in timed] == [0, 2000]
    # Each line its own session, named after its request: AIPerf's record of the response leads back to it.
    assert [line["session_id"] for line in timed] == [line["session_id"] for line in closed] == ["r0", "r1"]
    assert timed[0]["payload"]["stream"] is True


def _flag(argv, name):
    return argv[argv.index(name) + 1] if name in argv else None


def test_aiperf_argv_closed_loop_and_timestamps():
    closed = aiperf_argv(spec(concurrency=4, request_count=12), "aiperf", "chat", "/t.jsonl", "/out")
    assert _flag(closed, "--concurrency") == "4" and _flag(closed, "--request-count") == "12"
    assert "--no-fixed-schedule" in closed and "--fixed-schedule" not in closed
    assert "--use-server-token-count" in closed and "--streaming" in closed
    assert _flag(closed, "--server-metrics") == "http://127.0.0.1:9/metrics"
    timed = aiperf_argv(spec(schedule="timestamps", timestamps_ms=(0,)), "aiperf", "chat", "/t.jsonl", "/out")
    assert "--fixed-schedule" in timed and "--concurrency" not in timed and "--no-fixed-schedule" not in timed


def _scrape(drafts, draft_tokens, accepted, per_pos, generated, ok):
    lines = [
        "# TYPE vllm:spec_decode_num_drafts counter",
        f'vllm:spec_decode_num_drafts_total{{model_name="m"}} {drafts}',
        "# TYPE vllm:spec_decode_num_draft_tokens counter",
        f'vllm:spec_decode_num_draft_tokens_total{{model_name="m"}} {draft_tokens}',
        "# TYPE vllm:spec_decode_num_accepted_tokens counter",
        f'vllm:spec_decode_num_accepted_tokens_total{{model_name="m"}} {accepted}',
        "# TYPE vllm:spec_decode_num_accepted_tokens_per_pos counter",
        *(
            f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{model_name="m",position="{i}"}} {v}'
            for i, v in enumerate(per_pos)
        ),
        "# TYPE vllm:generation_tokens counter",
        f'vllm:generation_tokens_total{{model_name="m"}} {generated}',
        "# TYPE vllm:request_success counter",
        f'vllm:request_success_total{{model_name="m",finished_reason="length"}} {ok}',
    ]
    return "\n".join(lines) + "\n"


PROFILE = {
    "request_count": {"avg": 8},
    "benchmark_duration": {"avg": 2.0},
    "total_output_tokens": {"avg": 256},
    "request_latency": {"p50": 500.0, "p90": 900.0, "p99": 990.0, "avg": 510},
    "time_to_first_token": {"p50": 20.0, "p90": 30.0, "p99": 40.0},
    "inter_token_latency": {"p50": 5.0, "p90": 6.0, "p99": float("nan")},
}


def test_measurement_takes_server_counts_and_counter_growth():
    before = _scrape(10, 30, 15, (8, 5, 2), 100, 1)
    after = _scrape(40, 120, 75, (28, 25, 22), 356, 9)
    got = measurement(spec(concurrency=2, request_count=8), PROFILE, before, after, {"speculative_config": None})
    assert (got.request_count, got.ok_count, got.output_tokens, got.output_tokens_per_s) == (8, 8, 256, 128.0)
    assert got.latency_s == {"p50": 0.5, "p90": 0.9, "p99": 0.99}
    assert got.itl_s == {"p50": 0.005, "p90": 0.006}
    assert (got.spec.drafts, got.spec.draft_tokens, got.spec.accepted, got.spec.per_position) == (
        30,
        90,
        60,
        (20, 20, 20),
    )
    assert ReplayMeasurement.from_json(json.loads(json.dumps(got.to_json()))) == got
    # Without usage blocks the server's generation counter gives the output tokens.
    no_usage = measurement(spec(), {**PROFILE, "total_output_tokens": None}, before, after, None)
    assert no_usage.output_tokens == 256


def test_measurement_of_a_server_without_speculation():
    plain = "# TYPE vllm:generation_tokens counter\nvllm:generation_tokens_total 5\n"
    got = measurement(spec(), PROFILE, plain, plain, None)
    assert got.spec is None
    assert spec_config_from_metrics(plain)["speculative_config"] is None
    assert spec_config_from_metrics(_scrape(0, 0, 0, (0, 0, 0, 0), 0, 0))["speculative_config"] == {
        "num_speculative_tokens": 4
    }


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["serve", "--model", "m"], None),
        (
            ["x", "--speculative-config", '{"method":"ngram","num_speculative_tokens":3}'],
            {"method": "ngram", "num_speculative_tokens": 3},
        ),
        (["x", '--speculative_config={"method":"mtp"}'], {"method": "mtp"}),
        (
            ["x", "--speculative-config.method", "ngram", "--speculative-config.num-speculative-tokens", "4"],
            {"method": "ngram", "num_speculative_tokens": 4},
        ),
        (["x", "--speculative-config"], None),
    ],
)
def test_speculative_config_from_argv(argv, expected):
    assert speculative_config_from_argv(argv) == expected


def test_missing_aiperf_names_make_target(tmp_path):
    with pytest.raises(ConfigError) as err:
        find_aiperf(tmp_path / "nope" / "aiperf", {})
    assert "make aiperf-venv" in err.value.one_line() and err.value.where == "--aiperf"
    with pytest.raises(ConfigError) as err:
        find_aiperf(None, {"AIPERF_BIN": str(tmp_path / "missing")})
    assert err.value.where == "AIPERF_BIN" and "make aiperf-venv" in err.value.one_line()


@pytest.mark.parametrize(
    "environ, scratch, expected",
    [
        ({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "A": "b"}, None, {"A": "b"}),
        ({"A": "b"}, Path("/runs/c1"), {"A": "b", MMAP_BASE_VAR: "/runs/c1"}),
        ({MMAP_BASE_VAR: "/mine"}, Path("/runs/c1"), {MMAP_BASE_VAR: "/mine"}),  # the user's choice stands
    ],
)
def test_aiperf_env(environ, scratch, expected):
    assert aiperf_env(environ, scratch) == expected
