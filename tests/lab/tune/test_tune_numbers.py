"""Numbers at the lab's boundary: `tune --decide` and bench's measurement reader refuse a figure outside its
stated range in one line (exit 2), decide on anything inside it without overflow, and print strict JSON.

Reproducers of the hostile-input round: a subnormal throughput, throughputs near 1e+-150 (a math domain
error or an OverflowError before, exit 1), traffic weights near the largest double (the gain read "not
measured"), NaN and Infinity in a measurement file (passed into report.json)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

import strict_json
from nim_specdec_lab.replay.spec import ReplayMeasurement


def _runs(off: list[float], cand: list[float], concurrencies=(1, 4)) -> list[str]:
    lines = []
    for r, (b, c) in enumerate(zip(off, cand), start=1):
        for conc in concurrencies:
            lines.append(json.dumps({"config": "off", "round": r, "concurrency": conc, "output_tokens_per_s": b}))
            lines.append(json.dumps({"config": "ngram-k3", "round": r, "concurrency": conc, "output_tokens_per_s": c}))
    return lines


def _decide(tmp_path: Path, lines: list[str], *extra: str) -> subprocess.CompletedProcess:
    runs = tmp_path / "runs.jsonl"
    runs.write_text("\n".join(lines) + "\n")
    return subprocess.run(
        [sys.executable, "-m", "nim_specdec", "tune", "--decide", str(runs), "--json", *extra],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _refused(done: subprocess.CompletedProcess, *words: str) -> None:
    assert done.returncode == 2, done.stderr
    assert done.stdout == "" and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr
    for word in words:
        assert word in done.stderr, (word, done.stderr)


@pytest.mark.parametrize(
    "off,cand",
    [
        ([5e-324, 100.0, 100.0], [100.0, 120.0, 118.0]),  # a subnormal
        ([1e150, 1e150, 1e150], [1e-150, 1e-150, 1e-150]),  # near 1e+-150: the ratio underflows to 0
        ([1e-170, 1e-170, 1e-170], [1e170, 1e170, 1e170]),  # the ratio overflows
        ([100.0, 100.0, 100.0], [2e9, 2e9, 2e9]),  # above 10^9 tokens/s
    ],
    ids=["subnormal", "1e150-over-1e-150", "1e-170-under-1e170", "above-1e9"],
)
def test_a_throughput_outside_its_range_is_refused_in_one_line(tmp_path, off, cand):
    _refused(_decide(tmp_path, _runs(off, cand)), '"output_tokens_per_s" is', "from 0.001 to 1e+09")


@pytest.mark.parametrize(
    "off,cand",
    [
        ([1e-3, 1e-3, 1e-3], [1e9, 1e9, 1e9]),  # the range's two ends: a 1e12x speedup, no spread
        ([1e-3, 1e9, 1e-3], [1e9, 1e-3, 1e9]),  # a spread of 28 in log between rounds
        ([100.0, 150.0, 70.0], [104.0, 141.0, 72.0]),
    ],
    ids=["ends", "widest-spread", "ordinary"],
)
def test_any_throughput_in_range_decides_and_prints_strict_json(tmp_path, off, cand):
    done = _decide(tmp_path, _runs(off, cand))
    assert done.returncode == 0, done.stderr
    found = strict_json.loads(done.stdout)
    traffic = found["configurations"]["ngram-k3"]["traffic"]
    assert math.isfinite(traffic["speedup"]) and traffic["speedup"] > 0
    assert found["line"] == done.stderr.strip().splitlines()[-1]


def test_strict_json_refuses_what_json_lets_through():
    with pytest.raises(ValueError):
        strict_json.loads('{"speedup": NaN}')
    with pytest.raises(ValueError):
        strict_json.loads("[Infinity]")


@pytest.mark.parametrize(
    "weights,words",
    [
        ("1:1e308,4:1e308", ["weight '1e308' of 1", "from 0 to 1e+09"]),  # their sum overflowed: "not measured"
        ("1:2e9,4:1", ["weight '2e9' of 1"]),
        ("1:nan,4:1", ["weight 'nan' of 1"]),
    ],
)
def test_weights_outside_their_range_are_refused(tmp_path, weights, words):
    _refused(_decide(tmp_path, _runs([100.0] * 3, [130.0, 128.0, 133.0]), "--weights", weights), *words)


@pytest.mark.parametrize("weights", ["1:1e9,4:1e9", "1:5e-324,4:5e-324", "1:1e-300,4:3e-300"])
def test_weights_at_any_scale_in_range_keep_their_shares(tmp_path, weights):
    done = _decide(tmp_path, _runs([100.0] * 3, [130.0, 128.0, 133.0]), "--weights", weights)
    assert done.returncode == 0, done.stderr
    found = strict_json.loads(done.stdout)
    share = 0.25 if weights.endswith("3e-300") else 0.5
    assert found["weights"]["1"] == pytest.approx(share)
    assert found["configurations"]["ngram-k3"]["traffic"] is not None  # the gain is measured


MEASUREMENT = {
    "request_count": 16,
    "ok_count": 16,
    "concurrency": 2,
    "schedule": "closed",
    "duration_s": 10.0,
    "output_tokens": 2048,
    "output_tokens_per_s": 204.8,
    "latency_s": {"p50": 1.0},
    "ttft_s": {},
    "itl_s": {},
    "spec": None,
    "server_spec_config": None,
    "server_means": {"latency_mean_s": 0.9},
}


@pytest.mark.parametrize(
    "key,value,words",
    [
        ("output_tokens_per_s", float("nan"), "output_tokens_per_s is 'nan'"),
        ("duration_s", float("inf"), "duration_s is 'inf'"),
        ("output_tokens", float("inf"), "output_tokens is 'inf'"),  # int(inf): an OverflowError before
        ("output_tokens_per_s", 1e300, "outside [0, 1e+09]"),
        ("concurrency", 0, "concurrency is '0'"),
        ("latency_s", {"p50": float("nan")}, "latency_s.p50 is 'nan'"),
        ("server_means", {"latency_mean_s": -1.0}, "server_means.latency_mean_s is -1"),
    ],
)
def test_a_measurement_file_with_a_number_out_of_range_is_refused(key, value, words):
    with pytest.raises(ValueError, match=None) as err:
        ReplayMeasurement.from_json(json.loads(json.dumps({**MEASUREMENT, key: value})))
    assert words in str(err.value)
    assert ReplayMeasurement.from_json(MEASUREMENT).output_tokens_per_s == 204.8


@pytest.mark.parametrize(
    "value,words",
    [
        # NaN is refused by the strict JSON reader, before any number is looked at.
        (float("nan"), "measurement.json: NaN is not a JSON number"),
        (1e300, "is not a bench measurement (output_tokens_per_s is 1e+300, outside [0, 1e+09])"),
    ],
)
def test_bench_report_only_refuses_a_measurement_out_of_range_in_one_line(tmp_path, value, words):
    run_dir = tmp_path / "out" / "runs" / "off" / "traffic"
    run_dir.mkdir(parents=True)
    (run_dir / "measurement.json").write_text(json.dumps({**MEASUREMENT, "output_tokens_per_s": value}))
    done = subprocess.run(
        [sys.executable, "-m", "nim_specdec", "bench", "--report-only", "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    _refused(done, words)
    assert not (tmp_path / "out" / "report.json").exists()


# The fields a context must hold, each of its type, so that the numbers are what is judged.
CONTEXT = {"timestamps_ms": {}, "requests": {}, "greedy": True, "baseline_off": True, "ignore_eos": False}


@pytest.mark.parametrize(
    "context,words",
    [
        ({**CONTEXT, "margin": 1.5}, "margin is 1.5, outside [0, 0.999]"),
        ({**CONTEXT, "timestamps_ms": {"traffic": [0.0, 1e300]}, "margin": 0.03}, "timestamps_ms.traffic is 1e+300"),
        ({**CONTEXT, "margin": float("nan")}, "NaN is not a JSON number"),
        ({"margin": 0.03}, "timestamps_ms is missing"),
    ],
)
def test_bench_serve_report_only_refuses_a_context_out_of_range(tmp_path, context, words):
    (tmp_path / "out" / "serve").mkdir(parents=True)
    (tmp_path / "out" / "serve" / "bench_serve.json").write_text(json.dumps(context))
    done = subprocess.run(
        [sys.executable, "-m", "nim_specdec", "bench", "--report-only", "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    _refused(done, "bench_serve.json", words)
