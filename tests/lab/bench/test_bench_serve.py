"""bench --serve's pure parts: env files, the order of the rounds, the per-request flag, the report of paired
rounds, the trace notes, and its command-line refusals (before any server starts)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import stats_reference as ref
from nim_specdec.engines.vllm.observe.spec_counters import SpecCounters
from nim_specdec.errors import ConfigError
from nim_specdec_lab.bench.env_file import parse_env_file, side_env
from nim_specdec_lab.bench.report_md import markdown
from nim_specdec_lab.bench.serve_report import IGNORE_EOS, RoundRun, capture_in_flight, serve_report
from nim_specdec_lab.bench.serve_rounds import order_of, side_names
from nim_specdec_lab.replay.measure import warmup_for
from nim_specdec_lab.replay.request_acceptance import RequestAcceptance, with_per_request_metrics
from nim_specdec_lab.replay.spec import ReplayMeasurement
from nim_specdec_lab.replay.trace_notes import trace_notes
from nim_specdec_lab.stats import FASTER, NO_DIFFERENCE, paired

SAMPLING = {"greedy": True, "max_tokens": 64, "ignore_eos": False}
SPEC = SpecCounters(drafts=10, draft_tokens=30, accepted=15, per_position=(8, 5, 2))


def m(tok_s, concurrency=2, sampling=SAMPLING, spec=None, latency=0.5):
    return ReplayMeasurement(
        8,
        8,
        concurrency,
        "closed",
        2.0,
        int(tok_s * 2),
        tok_s,
        {"p50": latency},
        {"p50": 0.05},
        {"p50": 0.01},
        spec,
        None,
        {"latency_mean_s": latency},
        0.95,
        dict(sampling),
    )


@pytest.mark.parametrize(
    "lines, expected",
    [
        (["A=1", "# comment", "", "  B=x y  ", "C="], {"A": "1", "B": "x y  ", "C": ""}),
        (['Q="quoted"', "K=a=b"], {"Q": '"quoted"', "K": "a=b"}),
        (["HOME_FROM_ENV", "UNSET_HERE"], {"HOME_FROM_ENV": "/h"}),
    ],
)
def test_env_file_is_docker_form(lines, expected):
    assert parse_env_file(lines, "--baseline", "b.env", {"HOME_FROM_ENV": "/h"}) == expected


@pytest.mark.parametrize(
    "line, needle",
    [
        ("export A=1", "line 2: 'export A'= is not a variable name"),
        ("1A=2", "line 2: '1A'= is not a variable name"),
        ("hf abcdef secret", "line 2: has no '=' and is not a variable name"),
        ("A-B=secretvalue", "line 2: 'A-B'= is not a variable name"),
    ],
)
def test_env_file_bad_line_names_file_and_line_never_the_value(line, needle):
    with pytest.raises(ConfigError) as err:
        parse_env_file(["OK=1", line], "--candidate", "c.env", {})
    text = err.value.one_line()
    assert "--candidate" in text and "c.env " in text and needle in text and err.value.exit_code == 2
    assert "secret" not in text


def test_server_envs():
    current = {"PATH": "/bin", "NIM_MODEL_PATH": "/m", "NIM_SPECDEC_ARGS": "{}"}
    assert side_env(current, None, speculation_off=True) == {**current, "NIM_SPECDEC_ENABLE": "0"}
    assert side_env(current, None, speculation_off=False) == current
    # A file overrides the current environment: its NIM_* variables are the base (the model both sides
    # serve), the file's win, and NIM_SPECDEC_* comes from the file only.
    assert side_env(current, {"NIM_MODEL_PATH": "/other"}, speculation_off=True) == {
        "PATH": "/bin",
        "NIM_MODEL_PATH": "/other",
    }
    assert side_env(current, {"NIM_SPECDEC_ENABLE": "1"}, speculation_off=False) == {
        "PATH": "/bin",
        "NIM_MODEL_PATH": "/m",
        "NIM_SPECDEC_ENABLE": "1",
    }


def test_a_new_users_env_files_serve_the_model_from_the_environment(tmp_path):
    # NIM_MODEL_PATH=... nim-specdec bench --serve --baseline off.env --candidate ngram.env: each file names
    # only what differs, and both sides serve the model the environment names.
    off = parse_env_file(["NIM_SPECDEC_ENABLE=0"], "--baseline", "off.env", {})
    ngram = parse_env_file(["NIM_SPECDEC_ENABLE=1", 'NIM_SPECDEC_ARGS={"a": 1}'], "--candidate", "ngram.env", {})
    current = {"NIM_MODEL_PATH": "/models/m", "NIM_SPECDEC_ARGS": "{}", "HOME": "/h"}
    for side in (side_env(current, off, True), side_env(current, ngram, False)):
        assert side["NIM_MODEL_PATH"] == "/models/m" and side["HOME"] == "/h"
    assert "NIM_SPECDEC_ARGS" not in side_env(current, off, True)  # the environment's speculation stays out
    assert side_env(current, ngram, False)["NIM_SPECDEC_ARGS"] == '{"a": 1}'


def test_rounds_rotate_and_warm_up_scales_with_concurrency():
    # Two sides: they alternate. Three sides: a Latin square, each side once in each position over 3 rounds.
    assert [order_of(n) for n in (1, 2, 3)] == [
        ("baseline", "candidate"),
        ("candidate", "baseline"),
        ("baseline", "candidate"),
    ]
    three = ("baseline", "candidate1", "candidate2")
    orders = [order_of(n, three) for n in (1, 2, 3)]
    assert orders == [three, ("candidate1", "candidate2", "baseline"), ("candidate2", "baseline", "candidate1")]
    assert all(sorted(o[i] for o in orders) == sorted(three) for i in range(3))
    assert warmup_for(1, None) == 4 and warmup_for(8, None) == 18 and warmup_for(8, 0) == 0
    sides = side_names(2)
    assert sides == ("baseline", "candidate1", "candidate2") and side_names(1) == ("baseline", "candidate")


def test_per_request_metrics_only_where_the_server_speculates():
    assert with_per_request_metrics(["--seed", "0"], speculating=True) == [
        "--seed",
        "0",
        "--per-request-spec-decode-metrics",
        "summary",
    ]
    assert with_per_request_metrics(["--seed", "0"], speculating=False) == ["--seed", "0"]
    mine = ["--per-request-spec-decode-metrics=detailed"]
    assert with_per_request_metrics(mine, speculating=True) == mine


def _rounds(pairs, concurrency=2, category="traffic", base_sampling=SAMPLING):
    out = []
    for n, (base, cand) in enumerate(pairs, start=1):
        out.append(RoundRun(n, "baseline", concurrency, category, m(base, concurrency, base_sampling)))
        out.append(RoundRun(n, "candidate", concurrency, category, m(cand, concurrency, spec=SPEC)))
    return out


def test_serve_report_rows_carry_speedup_interval_verdict():
    # The machine drifts 1.5x between rounds; within each round the candidate is 1.3x: pairing finds it.
    report = serve_report(_rounds([(100, 130), (150, 196), (70, 90.5)]), 0.03, baseline_off=True)
    (row,) = report["rows"]
    assert row["category"] == "traffic" and row["concurrency"] == 2 and row["rounds"] == 3
    assert row["speedup"] == pytest.approx(1.3, rel=0.01) and row["verdict"] == FASTER
    low, high = row["speedup_interval"]
    assert 1.03 < low < row["speedup"] < high
    assert row["off"]["output_tokens_per_s"] == 100 and row["on"]["output_tokens_per_s"] == 130  # median rounds
    assert row["rounds_tokens_per_s"]["baseline"] == {"1": 100, "2": 150, "3": 70}
    assert report["labels"] == {"off": "baseline", "on": "candidate"}
    assert "t-interval" in report["stats"]["method"] and "rotated" in report["stats"]["order"]
    (line,) = report["expected"]
    assert "1.30" in line and "faster" in line and "3 rounds" in line
    text = markdown(report)
    assert "## Speedup" in text and "| traffic | 3 | 1.30" in text and "| faster |" in text
    assert "| traffic | baseline |" in text and "# Speculative decoding: candidate vs baseline" in text


def test_a_a_rounds_read_no_measurable_difference():
    report = serve_report(_rounds([(100, 104), (150, 141), (70, 72)]), 0.03, baseline_off=False)
    assert report["rows"][0]["verdict"] == NO_DIFFERENCE
    # The MDE of this run: the true speedup found with 80% probability in 3 rounds at a spread as large as its
    # own allows at 90% confidence (scipy.stats reference).
    spread = paired([(100, 104), (150, 141), (70, 72)], 0.03)
    mde = report["rows"][0]["mde"]
    assert mde["power"] == 0.8 and mde["spread_confidence"] == 0.9
    assert (mde["faster"], mde["slower"]) == pytest.approx(ref.mde(spread.log_sd, 3), rel=1e-3)


def test_several_candidates_each_against_the_same_baseline_rounds():
    accepted = (RequestAcceptance(0, "traffic", 8, 24, 18, (0, 2, 2, 4)),)
    spec = SpecCounters(drafts=8, draft_tokens=24, accepted=18, per_position=(8, 6, 4))
    runs = []
    for n, (base, same, faster) in enumerate([(100, 98, 140), (150, 160, 200), (70, 71, 95)], start=1):
        runs.append(RoundRun(n, "baseline", 2, "traffic", m(base)))
        runs.append(RoundRun(n, "candidate1", 2, "traffic", m(same)))
        fast = ReplayMeasurement(**{**m(faster, spec=spec).__dict__, "requests_acceptance": accepted})
        runs.append(RoundRun(n, "candidate2", 2, "traffic", fast))
    report = serve_report(runs, 0.03, baseline_off=True)
    rows = {r["category"]: r for r in report["rows"]}
    assert list(rows) == ["candidate1: traffic", "candidate2: traffic"]
    assert rows["candidate1: traffic"]["verdict"] == NO_DIFFERENCE and rows["candidate2: traffic"]["verdict"] == FASTER
    assert rows["candidate2: traffic"]["rounds_tokens_per_s"] == {
        "baseline": {"1": 100, "2": 150, "3": 70},
        "candidate": {"1": 140, "2": 200, "3": 95},
    }
    assert [r["candidate"] for r in report["rows"]] == ["candidate1", "candidate2"]
    assert len(report["expected"]) == 2 and "of candidate2 on traffic" in report["expected"][1]
    assert set(report["expected_detail"]) == {"candidate1: traffic", "candidate2: traffic"}
    # The matrix: the one side whose responses carried acceptance, from all three rounds.
    found = report["acceptance_matrix"]
    assert list(found["acceptance_length"]) == ["candidate2"] and found["counts"]["candidate2"]["traffic"] == {
        "prompts": 1,
        "responses": 3,
        "steps": 24,
        "draft_tokens": 72,
        "accepted": 54,
    }
    assert found["acceptance_length"]["candidate2"]["Overall"]["value"] == pytest.approx(1 + 54 / 24)


def test_different_sampling_gives_no_speedup_and_ignore_eos_warns():
    other = {**SAMPLING, "ignore_eos": True}
    report = serve_report(_rounds([(100, 130), (100, 131)], base_sampling=other), 0.03, True, ignore_eos=True)
    row = report["rows"][0]
    assert row["speedup"] is None and row["verdict"] is None and "different sampling" in row["speedup_note"]
    assert IGNORE_EOS in report["warnings"]


def test_expected_speedup_weighs_concurrencies_by_the_capture():
    runs = _rounds([(100, 150), (110, 160), (90, 140)], concurrency=1) + _rounds(
        [(200, 180), (210, 190), (190, 175)], 4
    )
    # 41 requests over 10 s, each about 0.5 s: 2.05 in flight, a third of the way from 1 to 4.
    level = capture_in_flight([250 * i for i in range(41)], runs, "traffic")
    assert level == pytest.approx(2.05)
    report = serve_report(runs, 0.03, True, levels={"traffic": level})
    rows = {r["category"]: r for r in report["rows"]}
    assert set(rows) == {"traffic @ 1", "traffic @ 4"}
    detail = report["expected_detail"]["traffic"]
    assert detail["weights"] == pytest.approx({"1": 0.65, "4": 0.35})
    assert rows["traffic @ 4"]["speedup"] < detail["speedup"] < rows["traffic @ 1"]["speedup"]
    assert "2.05 in flight" in report["expected"][0]


def test_trace_notes_shares():
    bodies = [
        {"messages": [], "temperature": 0.7},
        {"messages": [], "temperature": 0, "response_format": {"type": "json_object"}},
        {"messages": [], "tools": [{"type": "function"}], "n": 2},
        {"messages": [], "max_tokens": 100},
    ]
    notes = trace_notes(bodies, greedy=True, max_tokens=None, max_model_len=384, prompt_tokens=[10, 20, 350, 300])
    shares = notes["shares"]
    assert (shares["temperature_above_0"], shares["temperature_unset"], shares["structured_or_tools"]) == (1, 2, 2)
    assert shares["n_above_1"] == 1 and shares["near_max_model_len"] == 2  # 350 >= 90%; 300 + 100 > 384
    text = " | ".join(notes["lines"])
    assert "1 of 4 requests (25%) have temperature > 0, 2 of 4 requests (50%) set no temperature" in text
    assert "forced greedy" in text
    unset_only = trace_notes([{"prompt": "x"}], True, None, None, None)["lines"]
    assert unset_only[0].startswith("1 of 1 requests (100%) set no temperature")
    assert "2 of 4 requests (50%) use structured output or tools" in text and "n > 1" in text
    quiet = trace_notes([{"messages": [], "temperature": 0}], False, None, 384, [5])
    assert quiet["lines"] == [] and quiet["shares"]["near_max_model_len"] == 0
    assert "not checked" in trace_notes([{"prompt": "x"}], False, None, 384, None)["lines"][-1]


def _bench(tmp_path, *args):
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({"timestamp": 0, "payload": {"messages": [{"role": "user", "content": "hi"}]}}) + "\n")
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "nim_specdec",
            "bench",
            "--serve",
            "--trace",
            str(trace),
            "--out",
            str(tmp_path / "out"),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--rounds", "1"], "--rounds: 1 is below 2"),
        (["--baseline", "BAD"], "--baseline: cannot read BAD"),
        (["--candidate", "{env}"], "--candidate: {env} line 1: 'NOT A NAME'= is not a variable name"),
        (["--candidate", "{ok}", "--candidate", "{env}"], "--candidate: {env} line 1: 'NOT A NAME'= is not"),
        (["--schedule", "timestamps"], "--schedule: timestamps with --serve"),
        (["--concurrency", "2,x"], "--concurrency: 'x'"),
        (["--aiperf", "/nonexistent/aiperf"], "make aiperf-venv"),
        (["--url", "http://127.0.0.1:9"], "--serve: starts its own servers"),
    ],
)
def test_serve_refusals_are_one_line_exit_2(tmp_path, args, needle):
    env, ok = tmp_path / "c.env", tmp_path / "ok.env"
    env.write_text("NOT A NAME=hunter2\n")
    ok.write_text("NIM_SPECDEC_ENABLE=0\n")
    args = [a.replace("{env}", str(env)).replace("{ok}", str(ok)) for a in args]
    proc = _bench(tmp_path, *args)
    assert proc.returncode == 2, proc.stderr
    assert needle.replace("{env}", str(env)) in proc.stderr and "hunter2" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert not (tmp_path / "out" / "serve").exists()
