"""Table-driven checks of the capture parsing, grid, metrics parsing and the CLI's error paths."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from nim_specdec.engines.vllm.observe.spec_counters import parse_prometheus, summed
from nim_specdec.errors import ConfigError
from nim_specdec_lab.ngram.grid import make_grid, ngram_params, parse_int_set, predicted_speedup, rank, specdec_args
from nim_specdec_lab.ngram.simulator import NgramParams, SimResult
from nim_specdec_lab.ngram.trace import greedy_payload, parse_capture, tail_payload, token_ids


@pytest.mark.parametrize(
    "text, expected",
    [("1", (1,)), ("1,3", (1, 3)), ("2-4", (2, 3, 4)), ("5, 1-2 ,2", (1, 2, 5))],
)
def test_parse_int_set(text, expected):
    assert parse_int_set(text) == expected


@pytest.mark.parametrize("text", ["", "0", "3-1", "a", "1-b", "-2"])
def test_parse_int_set_rejects(text):
    with pytest.raises(ValueError):
        parse_int_set(text)


def test_grid_keeps_min_at_most_max():
    grid = make_grid((2,), (1, 3), (2, 3))
    assert [(p.min_n, p.max_n) for p in grid] == [(1, 2), (1, 3), (3, 3)]


def test_specdec_args_holds_an_object():
    assert json.loads(specdec_args(NgramParams(3, 1, 4))) == {
        "speculative_config": {
            "method": "ngram",
            "num_speculative_tokens": 3,
            "prompt_lookup_max": 4,
            "prompt_lookup_min": 1,
        }
    }


def test_cli_flags_the_grid_edge_and_shows_the_current_setting(tmp_path):
    records = tmp_path / "records.jsonl"
    row = {"prompt_token_ids": [1, 2, 3, 4, 1, 2], "output_token_ids": [3, 4, 1, 2] * 6, "tail_token_ids": [3, 4, 1, 2]}
    records.write_text(json.dumps(row) + "\n")
    report = tmp_path / "report.json"
    current = '{"speculative_config": {"method": "ngram", "num_speculative_tokens": 1, "prompt_lookup_min": 2}}'
    proc = _cli(
        "--records",
        str(records),
        "--k",
        "1-3",
        "--min",
        "1",
        "--max",
        "1-2",
        "--top",
        "1",
        "--current",
        current,
        "--json",
        str(report),
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(report.read_text())
    # Output that repeats its prompt: the longest draft tried wins, which may not be the best there is.
    best = data["recommended"]
    assert best["num_speculative_tokens"] == 3 and best["speculative_config"]["num_speculative_tokens"] == 3
    assert (
        json.loads(best["NIM_SPECDEC_ARGS"])["speculative_config"] == best["speculative_config"]
    )  # an object, once escaped
    assert "note: ngram: num_speculative_tokens=3 is the largest value tried; widen --k" in proc.stdout
    assert {"method": "ngram", "key": "num_speculative_tokens", "value": 3} in data["edge_of_grid"]
    cur = data["current"]
    assert (cur["num_speculative_tokens"], cur["prompt_lookup_min"], cur["prompt_lookup_max"]) == (1, 2, 2)
    marked = [line for line in proc.stdout.splitlines() if line.endswith("<- current")]
    assert len(marked) == 1 and marked[0].split()[:3] == ["1", "2", "2"]


@pytest.mark.parametrize(
    "config, expected",
    [
        ({"method": "ngram", "num_speculative_tokens": 3}, NgramParams(3, 5, 5)),
        ({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}, NgramParams(3, 4, 4)),
        (
            {"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_min": 1, "prompt_lookup_max": 3},
            NgramParams(2, 1, 3),
        ),
        ({"method": "suffix", "num_speculative_tokens": 3}, None),
        ({"method": "ngram"}, None),
        (None, None),
    ],
)
def test_ngram_params_from_a_config(config, expected):
    assert ngram_params(config) == expected


def _result(k, steps, draft_tokens, baseline=100):
    return SimResult(NgramParams(k, 1, 1), 10, draft_tokens, 5, (5,) + (0,) * (k - 1), steps, baseline, None)


@pytest.mark.parametrize(
    "steps, draft_tokens, cost, expected",
    [(100, 0, 0.1, 1.0), (50, 100, 0.0, 2.0), (50, 100, 0.5, 1.0), (0, 0, 0.1, 1.0)],
)
def test_predicted_speedup(steps, draft_tokens, cost, expected):
    assert predicted_speedup(_result(1, steps, draft_tokens), cost) == pytest.approx(expected)


def test_rank_prefers_speed_then_fewer_draft_tokens():
    ranked = rank([_result(3, 50, 90), _result(2, 50, 60), _result(1, 80, 10)], 0.0)
    assert [s.result.params.k for s in ranked] == [2, 3, 1]


@pytest.mark.parametrize(
    "line, problem",
    [
        ("not json", "is not JSON"),
        ('{"timestamp": 1}', 'has no "payload"'),
        ('{"timestamp": 1, "payload": {"x": 1}}', "neither"),
    ],
)
def test_parse_capture_rejects_bad_lines(line, problem):
    with pytest.raises(ConfigError, match=problem):
        parse_capture(['{"payload": {"prompt": "a"}}', line])


def test_parse_capture_routes_by_payload_kind():
    captured = parse_capture(['{"timestamp": 0, "payload": {"messages": []}}', "", '{"payload": {"prompt": "a"}}'])
    assert [(c.line, c.path) for c in captured] == [(1, "/v1/chat/completions"), (3, "/v1/completions")]


def test_greedy_and_tail_payloads():
    payload = {
        "model": "m",
        "messages": [],
        "temperature": 0.7,
        "top_p": 0.9,
        "stream": True,
        "n": 2,
        "stop": ["x"],
        "max_completion_tokens": 10,
    }
    greedy = greedy_payload(payload, "served")
    assert greedy == {
        "model": "served",
        "messages": [],
        "temperature": 0,
        "return_token_ids": True,
        "stop": ["x"],
        "max_completion_tokens": 10,
    }
    tail = tail_payload(greedy, 7, 4)
    assert tail["max_tokens"] == 11 and tail["ignore_eos"] is True
    assert "stop" not in tail and "max_completion_tokens" not in tail
    assert payload["temperature"] == 0.7  # the capture is not modified


def test_token_ids_from_chat_and_completion_responses():
    chat = {"prompt_token_ids": [1, 2], "choices": [{"token_ids": [3], "finish_reason": "length"}]}
    completion = {"choices": [{"prompt_token_ids": [4], "token_ids": [5, 6], "finish_reason": "stop"}]}
    assert token_ids(chat) == ([1, 2], [3], "length")
    assert token_ids(completion) == ([4], [5, 6], "stop")
    with pytest.raises(ValueError):
        token_ids({"choices": [{"message": {}}]})


METRICS = """# HELP vllm:spec_decode_num_drafts_total x
vllm:spec_decode_num_drafts_total{engine="0",model_name="tiny"} 66.0
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="tiny"} 180.0
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="tiny"} 81.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="tiny",position="0"} 39.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="tiny",position="2"} 18.0
vllm:spec_decode_num_drafts_created 1.7e9
"""


def test_summed_counters_and_their_growth():
    after = summed(parse_prometheus(METRICS))
    assert after.counts() == {"drafts": 66, "draft_tokens": 180, "accepted": 81, "pos0": 39, "pos1": 0, "pos2": 18}
    assert summed(parse_prometheus("")).counts() == {"drafts": 0, "draft_tokens": 0, "accepted": 0}
    assert after.minus(summed(parse_prometheus(""))).counts()["accepted"] == 81
    two_models = METRICS + METRICS.replace('model_name="tiny"', 'model_name="other"').replace(
        "# HELP vllm:spec_decode_num_drafts_total x\n", ""
    )
    assert summed(parse_prometheus(two_models)).counts()["pos2"] == 36


def _cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "nim_specdec", "tune-ngram", *args], capture_output=True, text=True, timeout=120
    )


def test_cli_from_saved_records(tmp_path):
    records = tmp_path / "records.jsonl"
    row = {
        "prompt_token_ids": [1, 2, 3, 4, 1, 2],
        "output_token_ids": [3, 4, 1, 2, 3, 4, 1, 2, 3],
        "tail_token_ids": [4, 1],
    }
    records.write_text(json.dumps(row) + "\n")
    report = tmp_path / "report.json"
    proc = _cli("--records", str(records), "--k", "1-3", "--min", "1", "--max", "1-2", "--json", str(report))
    assert proc.returncode == 0, proc.stderr
    assert "NIM_SPECDEC_ARGS='" in proc.stdout
    data = json.loads(report.read_text())
    assert data["output_tokens"] == 9 and len(data["grid"]) == 6 and data["max_model_len"] is None
    best = data["grid"][0]
    assert best["accepted_tokens"] > 0 and best["speedup"] > 1

    # A model length saved with the records is simulated: here it leaves room for no draft.
    records.write_text(json.dumps({**row, "max_model_len": 8}) + "\n")
    proc = _cli("--records", str(records), "--k", "1-3", "--min", "1", "--max", "1-2", "--json", str(report))
    data = json.loads(report.read_text())
    assert proc.returncode == 0 and data["max_model_len"] == 8
    assert all(r["drafts"] == 0 for r in data["grid"]) and "keep speculation off" in proc.stdout
    assert data["requests_near_model_length"] == 1 and "prediction is optimistic" in proc.stderr

    # Far from the model length: no such note.
    records.write_text(json.dumps({**row, "max_model_len": 64}) + "\n")
    proc = _cli("--records", str(records), "--k", "1-3", "--min", "1", "--max", "1-2", "--json", str(report))
    assert proc.returncode == 0 and json.loads(report.read_text())["requests_near_model_length"] == 0
    assert "optimistic" not in proc.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        ((), "needs --trace and --url"),
        (("--records", "/nonexistent/records.jsonl"), "cannot read"),
        (("--records", "x", "--url", "http://127.0.0.1:1"), "either saved records or a replay"),
        (("--records", "x", "--k", "0"), "--k: bad range"),
        (("--records", "x", "--min", "4", "--max", "1-3"), "no pair with min <= max"),
        (("--trace", "/nonexistent.jsonl", "--url", "http://127.0.0.1:1"), "cannot read"),
        (("--records", "x", "--current", "{"), "--current: invalid JSON"),
        (("--records", "x", "--current", '{"method": "suffix"}'), "not an n-gram"),
    ],
)
def test_cli_errors_are_one_line(args, message):
    proc = _cli(*args)
    assert proc.returncode == 2
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_cli_unreachable_server_is_one_line(tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"timestamp": 0, "payload": {"messages": [{"role": "user", "content": "hi"}]}}\n')
    proc = _cli("--trace", str(trace), "--url", "http://127.0.0.1:9")
    assert proc.returncode == 4 and "cannot list the models" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("params", [NgramParams(3, 1, 4), NgramParams(8, 2, 5)])
def test_recommended_value_is_what_the_launcher_applies(params, models, tmp_path):
    import os

    env = dict(
        os.environ,
        NIM_MODEL_PATH=str(models["target"]),
        NIM_SPECDEC_ENABLE="1",
        NIM_SPECDEC_ARGS=specdec_args(params),
        NIM_CACHE_PATH=str(tmp_path / "cache"),
    )
    proc = subprocess.run(
        [sys.executable, "-m", "nim_specdec", "plan"], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert plan["speculative"]["config"] == {
        "method": "ngram",
        "num_speculative_tokens": params.k,
        "prompt_lookup_max": params.max_n,
        "prompt_lookup_min": params.min_n,
    }
    vllm_value = json.loads(plan["argv"][plan["argv"].index("--speculative-config") + 1])
    assert vllm_value == plan["speculative"]["config"]
