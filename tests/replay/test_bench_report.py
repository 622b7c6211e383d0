"""bench's pure parts: workloads from a capture or SPEED-Bench, the on/off comparison, report.md, the plots,
and the `--extra` spellings."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from nim_specdec_lab.cli.cmd_bench import rewrite_argv
from nim_specdec.errors import ConfigError
from nim_specdec.observe.spec_counters import SpecCounters
from nim_specdec_lab.replay.spec import ReplayMeasurement
from nim_specdec_lab.specbench.compare import ARRIVAL_RATE, compare
from nim_specdec_lab.specbench.inputs import from_capture, from_speed_bench
from nim_specdec_lab.specbench.plots import write_plots
from nim_specdec_lab.specbench.report_md import markdown

LAT = {"p50": 0.5, "p90": 0.8, "p99": 0.9}


def m(tok_s, schedule="closed", concurrency=2, count=8, ok=8, spec=None, config=None):
    return ReplayMeasurement(
        count,
        ok,
        concurrency,
        schedule,
        2.0,
        int(tok_s * 2),
        tok_s,
        LAT,
        {"p50": 0.05, "p90": 0.08, "p99": 0.09},
        {"p50": 0.01, "p90": 0.02, "p99": 0.03},
        spec,
        config,
    )


ON_SPEC = SpecCounters(drafts=10, draft_tokens=30, accepted=15, per_position=(8, 5, 2))
NGRAM = {"speculative_config": {"method": "ngram", "num_speculative_tokens": 3}, "source": "server command line"}


def test_compare_speedup_acceptance_and_warnings():
    found = {
        "off": {"math": m(100.0), "code": m(100.0, concurrency=1), "qa": m(50.0, ok=6)},
        "on": {"math": m(150.0, spec=ON_SPEC, config=NGRAM), "code": m(90.0, spec=ON_SPEC), "chat": m(10.0)},
    }
    report = compare(found)
    rows = {r["category"]: r for r in report["rows"]}
    assert list(rows) == ["chat", "code", "math", "qa"]
    assert rows["math"]["speedup"] == pytest.approx(1.5) and rows["math"]["speedup_note"] is None
    assert rows["math"]["on"]["acceptance"]["acceptance_length"] == pytest.approx(2.5)
    assert rows["math"]["on"]["acceptance"]["per_position_rate"] == pytest.approx([0.8, 0.5, 0.2])
    assert rows["code"]["speedup"] is None and "concurrency" in rows["code"]["speedup_note"]
    assert rows["qa"]["on"] is None and rows["chat"]["off"] is None
    warnings = " | ".join(report["warnings"])
    assert "qa off: 2 of 8 requests failed" in warnings
    assert "chat: the 'on' server made no drafts" in warnings and "no 'on' run yet" in warnings


def test_timestamps_schedule_is_flagged_in_the_report(tmp_path):
    report = compare(
        {"off": {"t": m(10.0, "timestamps")}, "on": {"t": m(10.2, "timestamps", spec=ON_SPEC, config=NGRAM)}}
    )
    assert report["rows"][0]["speedup_note"] == ARRIVAL_RATE
    text = markdown(report)
    assert ARRIVAL_RATE in text and "captured times" in text


def test_markdown_holds_every_figure():
    report = compare(
        {
            "off": {"math": m(100.0, config={"speculative_config": None, "source": "server command line"})},
            "on": {"math": m(150.0, spec=ON_SPEC, config=NGRAM)},
        }
    )
    text = markdown(report)
    assert "| math | on | 8/8 | closed loop, 2 in flight | 300 | 2.00 | 150.0 | 1.500x |" in text
    assert "| math | off | 500.0 / 800.0 / 900.0 | 50.0 / 80.0 / 90.0 | 10.0 / 20.0 / 30.0 |" in text
    assert "| math | on | 0.500 | 2.500 | 1:0.800 2:0.500 3:0.200 | 10 |" in text
    assert '`{"method": "ngram", "num_speculative_tokens": 3}`' in text and "off (none)" in text
    assert "speedup = output tokens/s with speculation on / output tokens/s with it off" in text


def test_plots_are_pngs(tmp_path):
    report = compare({"off": {"math": m(100.0)}, "on": {"math": m(150.0, spec=ON_SPEC)}})
    paths = write_plots(report, tmp_path)
    assert [p.name for p in paths] == [
        "throughput_on_off.png",
        "latency_on_off.png",
        "acceptance_by_position.png",
        "speedup_interval.png",
    ]
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in paths)


def test_capture_keeps_timestamps_and_speed_bench_takes_first_turns():
    lines = [
        json.dumps({"timestamp": 1000 * i, "payload": {"messages": [{"role": "user", "content": str(i)}]}})
        for i in range(3)
    ]
    work = from_capture("traffic", lines)
    assert work.timestamps_ms == (0, 1000, 2000) and len(work.requests) == 3
    assert from_capture("t", [json.dumps({"payload": {"prompt": "x"}})]).timestamps_ms is None
    with pytest.raises(ConfigError):
        from_capture("t", [lines[0], json.dumps({"payload": {"prompt": "x"}})])
    rows = [
        {
            "question_id": "a" * 32,
            "category": "math",
            "messages": [
                {"role": "system", "content": "s"},
                {"role": "user", "content": "q1"},
                {"role": "user", "content": "q2"},
            ],
        },
        {"question_id": "b" * 32, "category": "qa", "messages": [{"role": "user", "content": "q"}]},
    ]
    work = from_speed_bench("math", [json.dumps(r) for r in rows])
    assert work.requests == ({"messages": rows[0]["messages"][:2]},) and "1 multi-turn" in work.note
    with pytest.raises(ConfigError):
        from_speed_bench("coding", [json.dumps(r) for r in rows])


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["--extra", "--no-fixed-schedule", "--mode", "on"], ["--extra=--no-fixed-schedule", "--mode", "on"]),
        (["--extra=--request-count=20"], ["--extra=--request-count=20"]),
        (["--out", "x", "--extra"], ["--out", "x", "--extra"]),
    ],
)
def test_extra_takes_both_spellings(argv, expected):
    assert rewrite_argv(argv) == expected


@pytest.mark.parametrize(
    "args, code, needle",
    [
        (["--aiperf", "/nonexistent/aiperf"], 2, "make aiperf-venv"),
        (["--aiperf", sys.executable], 4, "cannot list the models at http://127.0.0.1:9/v1/models"),
        (
            ["--aiperf", sys.executable, "--schedule", "timestamps", "--request-count", "3"],
            2,
            "--request-count: only the closed loop",
        ),
        (
            ["--aiperf", sys.executable, "--extra", "--no-fixed-schedule", "--schedule", "timestamps"],
            4,
            "cannot list the models",
        ),
    ],
)
def test_cli_errors_are_one_line(tmp_path, args, code, needle):
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({"timestamp": 0, "payload": {"messages": [{"role": "user", "content": "hi"}]}}) + "\n")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "nim_specdec",
            "bench",
            "--url",
            "http://127.0.0.1:9",
            "--mode",
            "off",
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
    assert proc.returncode == code and needle in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
