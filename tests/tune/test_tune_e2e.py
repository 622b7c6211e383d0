"""`nim-specdec tune` end to end on the CPU: the demo model, whose user runs n-gram, tuned in three rounds.

Six server starts (off and the user's n-gram in each of three rounds, and the model's choice in each round
too where it is no configuration already in the lineup), each with --enforce-eager (no torch.compile: half the
start time; the same for every server, so the comparison holds): two concurrencies of 32 short requests each.
The test checks the rounds' order, every interval against off, the decision, the held-out verification, the
answer line, and that `plan` takes the variables tune prints.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from itertools import groupby
from pathlib import Path

import pytest

from vllm_runs import aiperf_bin, demo_env

pytestmark = pytest.mark.e2e

PROMPTS = (
    "the quick brown fox jumps over the lazy dog",
    "speculative decoding accepts tokens when they match",
    "a lazy dog while the fox jumps",
    "drafts tokens that the target model verifies",
)
USERS_NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 1, "prompt_lookup_max": 4}
VERDICTS = ("faster", "slower", "no measurable difference")


def _env(demo_model: Path, tmp_path: Path) -> dict[str, str]:
    return demo_env(
        demo_model,
        tmp_path,
        NIM_SPECDEC_ENABLE="1",
        NIM_SPECDEC_ARGS=json.dumps({"speculative_config": USERS_NGRAM}),
    )


def _port_closed(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(2)
        return sock.connect_ex(("127.0.0.1", port)) != 0


def _interval(speedup: dict | None) -> bool:
    return bool(speedup) and len(speedup["speedup_interval"]) == 2 and speedup["verdict"] in VERDICTS


def test_tune_decides_on_intervals_from_interleaved_rounds(demo_model, tmp_path):
    trace = tmp_path / "trace.jsonl"
    trace.write_text(
        "".join(
            json.dumps(
                {
                    "timestamp": 500 * i,
                    "payload": {"model": "demo", "max_tokens": 64, "messages": [{"role": "user", "content": p}]},
                }
            )
            + "\n"
            for i, p in enumerate(PROMPTS)
        )
    )
    out = tmp_path / "out"
    env = {**_env(demo_model, tmp_path), "AIPERF_BIN": aiperf_bin()}
    command = [
        sys.executable,
        "-m",
        "nim_specdec",
        "tune",
        "--trace",
        str(trace),
        "--concurrency",
        "1,4",
        "--max-k",
        "3",
        "--methods",
        "ngram",
        "--max-tokens",
        "32",
        "--ignore-eos",
        "--out",
        str(out),
        "--rounds",
        "3",
        # 1024 output tokens per run, not the default 2048 (runner.MIN_RUN_TOKENS, tested in test_tune_core):
        # the suite's time is shared.
        "--requests-per-run",
        "32",
        # Measured here on the CPU build, to serve on CUDA: tune must say what differs.
        "--serving-platform",
        "cuda",
        "--",
        "--max-model-len",
        "384",
        "--max-num-seqs",
        "4",
        "--seed",
        "0",
        "--enforce-eager",
    ]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=3600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((out / "tune.json").read_text())
    decision = result["decision"]

    # Rounds: one server per configuration in the same order each round, the model's choice among them from
    # round 1 on; tune.json's runs are in measuring order.
    lineup = result["lineup"]
    assert lineup[:2] == ["off", "ngram-k3"] and lineup[2:] in ([], ["model-choice"]), lineup
    assert decision["model_choice"] in lineup
    expected = [(name, r) for r in (1, 2, 3) for name in lineup]
    assert [k for k, _ in groupby((run["configuration"], run["round"]) for run in result["runs"])] == expected
    assert [s["name"] for s in result["servers"]] == [name if r == 1 else f"{name}-r{r}" for name, r in expected]
    assert result["rounds"] == 3 and len(result["runs"]) == 2 * len(expected)

    # Every speculating configuration against off at each concurrency and on the traffic: speedup, interval, verdict.
    for row in result["configurations"]:
        if row["kind"] != "off":
            assert all(_interval(row["vs_off"][c]) for c in ("1", "4")), row
            assert _interval(row["vs_off_on_traffic"]), row
    recommended = result["recommended"]
    if recommended["NIM_SPECDEC_ENABLE"] == "1":
        # Recommended because it measured faster, or kept because the rounds cannot tell: the user's n-gram or
        # the model's schedule of it, in either case measured wholly below off nowhere.
        config = json.loads(recommended["NIM_SPECDEC_ARGS"])["speculative_config"]
        assert config["method"] == "ngram", config
        rec = next(r for r in result["configurations"] if r["recommended"])
        assert all(rec["vs_off"][c]["speedup_interval"][1] >= 1.0 for c in ("1", "4")), rec
        assert decision["cannot_tell"] == ("keeping your configuration (ngram-k3)" in decision["line"])
    else:
        # Off only where the user's n-gram measured wholly below off somewhere (never on this demo, whose
        # output repeats: prompt lookup is accepted).
        assert "measured slower than off" in decision["line"], decision
    assert any(line == decision["line"] for line in done.stderr.splitlines())

    # Verification, out of sample only: the recommendation against off with its interval at every concurrency,
    # and the model's choice predicted at each concurrency by fits that never saw it, per round.
    for row in result["verification"]:
        assert row["recommended"] == decision["recommended"]
        if row["recommended"] != "off":
            assert _interval(row["recommended_vs_off"]), row
        held = row["held_out"]
        assert held["prediction_of"] == decision["model_choice"] and held["rounds"] == 3, row
        low, high = held["error_interval"]
        assert low <= held["error"] <= high, held
        # A fit on the other concurrency alone does not reproduce this one's runs: no +0.0% by construction.
        assert all(abs(held["predicted"][r] / held["measured"][r] - 1) > 1e-4 for r in ("1", "2", "3")), held
    assert "prediction_error" not in json.dumps(result["verification"])
    text = (out / "tune.md").read_text()
    assert "## Against speculation off (3 round(s), 95% intervals)" in text
    assert "## Verification (out of sample)" in text

    # The answer line, last before the variables, and in tune.json.
    answer = result["answer"]
    assert answer["line"].startswith("tune: ") and "expected speedup on this traffic" in answer["line"]
    lines = done.stderr.strip().splitlines()
    assert lines[-1] == answer["line"], lines[-3:]
    if recommended["NIM_SPECDEC_ENABLE"] == "1":
        assert len(answer["speedup_interval"]) == 2 and answer["rounds"] == 3, answer
    assert done.stdout.splitlines()[0].startswith("NIM_SPECDEC_ENABLE=")

    # A speculating server reports each response's acceptance; off's server has no such flag (vLLM refuses it).
    # (vLLM prints its observability config at start: 'none' is its default.)
    logs = {name: (out / "logs" / f"{name}.log").read_text() for name in ("ngram-k3", "off")}
    assert "per_request_spec_decode_metrics='summary'" in logs["ngram-k3"]
    assert "per_request_spec_decode_metrics='none'" in logs["off"]

    # What each server ran on, from its own log where vLLM says it: the CPU build's V1 runner without CUDA graphs.
    for server in result["servers"]:
        engine = server["engine"]
        assert (engine["platform"], engine["runner"], engine["cudagraph_mode"], engine["async_scheduling"]) == (
            "cpu",
            "v1",
            "NONE",
            False,
        ), server
        logged = ("vllm_version", "platform", "runner", "cudagraph_mode")
        assert {k: engine["sources"][k] for k in logged} == dict.fromkeys(logged, "server log"), engine["sources"]
    serving = result["engine"]["serving"]
    assert serving["platform"] == "cuda"
    differences = result["engine"]["differences"]
    assert differences and differences[0].startswith("measured on cpu, to serve on cuda"), differences
    assert any(line.startswith("tune: serving engine: measured on cpu") for line in done.stderr.splitlines())

    # The variables are ready to use: `plan` accepts them with the same environment.
    planned = subprocess.run(
        [sys.executable, "-m", "nim_specdec", "plan"],
        capture_output=True,
        text=True,
        env={**_env(demo_model, tmp_path), **recommended},
        timeout=120,
    )
    assert planned.returncode == 0, planned.stderr
    assert "NIM_TUNED_FOR" not in planned.stderr, planned.stderr  # applied on the engine it was measured on
    measured_on = json.loads(recommended["NIM_TUNED_FOR"])
    assert {k: measured_on[k] for k in ("vllm", "runner", "platform")} == {
        "vllm": result["servers"][0]["engine"]["vllm_version"],
        "runner": "v1",
        "platform": "cpu",
    }
    plan = json.loads(planned.stdout)["speculative"]
    assert plan["enabled"] is (recommended["NIM_SPECDEC_ENABLE"] == "1")

    assert all(_port_closed(server["port"]) for server in result["servers"])  # none left running
    assert text.startswith("# nim-specdec tune")
    assert (out / "tokens_per_s.png").stat().st_size > 0 and (out / "speedup_vs_off.png").stat().st_size > 0
