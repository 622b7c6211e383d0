"""bench's pure parts: workloads from a capture or SPEED-Bench, the on/off comparison, report.md, the plots,
and the `--extra` spellings."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from nim_specdec.engines.vllm.observe.spec_counters import SpecCounters
from nim_specdec.errors import ConfigError
from nim_specdec_lab.bench.acceptance_matrix import from_runs
from nim_specdec_lab.bench.compare import ARRIVAL_RATE, compare
from nim_specdec_lab.bench.inputs import SPEED_BENCH, from_capture, from_speed_bench, speed_bench_mix
from nim_specdec_lab.bench.plots import write_plots
from nim_specdec_lab.bench.report_md import markdown
from nim_specdec_lab.cli.cmd_bench import rewrite_argv
from nim_specdec_lab.replay.request_acceptance import RequestAcceptance
from nim_specdec_lab.replay.spec import ReplayMeasurement

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


def test_speed_bench_categories_mix_into_one_workload_taken_in_turn():
    rows = [{"category": c, "messages": [{"role": "user", "content": f"{c}{i}"}]} for c, n in CATS for i in range(n)]
    work = speed_bench_mix(["writing", "coding", "math"], [json.dumps(r) for r in rows])
    assert work.category == SPEED_BENCH and work.timestamps_ms is None
    # One of each category in turn while each lasts, so that any prefix of the run has the same mix.
    assert work.labels == ("writing", "coding", "math", "writing", "coding", "math", "writing", "math", "math")
    assert [r["messages"][0]["content"] for r in work.requests][:4] == ["writing0", "coding0", "math0", "writing1"]
    capture = from_capture("traffic", [json.dumps({"payload": {"prompt": "x"}})] * 2)
    assert work.request_labels() == work.labels and capture.request_labels() == ("traffic", "traffic")
    with pytest.raises(ConfigError):
        speed_bench_mix(["writing", "qa"], [json.dumps(r) for r in rows])


CATS = (("coding", 2), ("math", 4), ("writing", 3))


def _with_responses(tok_s, records):
    spec = SpecCounters(
        sum(r.steps for r in records), sum(r.draft_tokens for r in records), sum(r.accepted for r in records), (0, 0, 0)
    )
    return ReplayMeasurement(
        len(records),
        len(records),
        2,
        "closed",
        2.0,
        int(tok_s * 2),
        tok_s,
        LAT,
        LAT,
        LAT,
        spec,
        NGRAM,
        requests_acceptance=tuple(records),
    )


def test_markdown_and_plot_show_the_acceptance_matrix(tmp_path):
    records = [
        RequestAcceptance(0, "writing", 10, 30, 12, (2, 4, 2, 2)),
        RequestAcceptance(1, "coding", 10, 30, 27, (0, 0, 3, 7)),
        RequestAcceptance(2, "writing", 8, 24, 8, (3, 2, 1, 1)),
        RequestAcceptance(3, "coding", 6, 18, 15, (0, 1, 1, 4)),
    ]
    report = compare({"off": {SPEED_BENCH: m(100.0)}, "on": {SPEED_BENCH: _with_responses(150.0, records)}})
    report["acceptance_matrix"], notes = from_runs({"off": [m(100.0)], "on": [_with_responses(150.0, records)]})
    assert notes == []
    text = markdown(report)
    found = report["acceptance_matrix"]
    coding, writing = (found["acceptance_length"]["on"][c] for c in ("coding", "writing"))
    assert coding["value"] == pytest.approx(1 + 42 / 16, abs=1e-4) and writing["value"] == pytest.approx(
        1 + 20 / 18, abs=1e-4
    )
    # AIPerf's layout: configuration, the categories in SPEED-Bench's order, Overall; figures to 2 decimals.
    assert "## Acceptance by category" in text and "| configuration | coding | writing | Overall |" in text
    low, high = coding["interval"]
    assert f"| on | {coding['value']:.2f} [{low:.2f}, {high:.2f}] | {writing['value']:.2f} [" in text
    assert "- on: prompts (responses) per category: coding 2 (2), writing 2 (2)." in text
    assert "Acceptance rate:" in text and "delta method" in text
    paths = write_plots(report, tmp_path)
    assert paths[-1].name == "acceptance_by_category.png" and paths[-1].read_bytes()[:4] == b"\x89PNG"
    # A report without a matrix does not leave an earlier one's plot beside it.
    write_plots(compare({"off": {"t": m(100.0)}}), tmp_path)
    assert not (tmp_path / "acceptance_by_category.png").exists()


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
