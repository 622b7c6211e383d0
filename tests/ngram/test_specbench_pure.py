"""AIPerf export parsing and the on/off table, from hand-written exports."""

from __future__ import annotations

import pytest

from nim_specdec.tools.specbench.aiperf_results import RunResult, parse_run
from nim_specdec.tools.specbench.table import markdown, rows

PROFILE = {"request_count": {"unit": "requests", "avg": 4.0}, "output_token_throughput": {"unit": "tokens/sec", "avg": 120.5}}


def _series(total, **labels):
    return {"labels": {"engine": "0", "model_name": "tiny", **labels}, "stats": {"total": total}}


SERVER = {
    "metrics": {
        "vllm:spec_decode_num_drafts": {"series": [_series(60.0), _series(6.0, engine="1")]},
        "vllm:spec_decode_num_draft_tokens": {"series": [_series(180.0)]},
        "vllm:spec_decode_num_accepted_tokens": {"series": [_series(81.0)]},
        "vllm:spec_decode_num_accepted_tokens_per_pos": {
            "series": [_series(39.0, position="0"), _series(18.0, position="2"), _series(24.0, position="1")]
        },
    }
}


def test_parse_run_with_spec_counters():
    run = parse_run(PROFILE, SERVER)
    assert run == RunResult(120.5, 4, drafts=66, draft_tokens=180, accepted=81, accepted_per_pos=(39, 24, 18))
    assert run.acceptance_rate == pytest.approx(0.45)
    assert run.acceptance_length == pytest.approx(1 + 81 / 66)


@pytest.mark.parametrize("server", [None, {}, {"metrics": {}}])
def test_parse_run_without_spec_counters(server):
    run = parse_run(PROFILE, server)
    assert (run.output_tokens_per_s, run.drafts, run.acceptance_rate, run.acceptance_length) == (120.5, 0, None, None)


def test_rows_pair_categories_and_compute_speedup():
    on = {"math": RunResult(150.0, 4, 10, 30, 15, (8, 5, 2)), "code": RunResult(90.0, 4, 10, 30, 3, (3, 0, 0))}
    off = {"math": RunResult(100.0, 4), "qa": RunResult(50.0, 4)}
    table = rows(on, off)
    assert [r["category"] for r in table] == ["code", "math", "qa"]
    code, math, qa = table
    assert math["speedup"] == pytest.approx(1.5) and math["accept_len"] == pytest.approx(2.5)
    assert code["tok_s_off"] is None and code["speedup"] is None
    assert qa["accept_rate"] is None and qa["tok_s_off"] == 50.0
    text = markdown(table)
    assert text.splitlines()[0] == "| category | accept_rate | accept_len | tok_s_on | tok_s_off | speedup |"
    assert "| math | 0.500 | 2.500 | 150.000 | 100.000 | 1.500 |" in text
    assert "| qa | - | - | - | 50.000 | - |" in text


def _cli(*args):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "nim_specdec", "bench", *args], capture_output=True, text=True, timeout=120)


def test_report_only_builds_tables_and_plots_from_saved_runs(tmp_path):
    import json

    for mode, server in (("on", SERVER), ("off", None)):
        run = tmp_path / "runs" / mode / "trace"
        run.mkdir(parents=True)
        (run / "profile_export_aiperf.json").write_text(json.dumps(PROFILE))
        if server:
            (run / "server_metrics_export.json").write_text(json.dumps(server))
    proc = _cli("--report-only", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "| trace | 0.450 |" in proc.stdout
    assert json.loads((tmp_path / "report.json").read_text())["rows"][0]["speedup"] == pytest.approx(1.0)
    for png in ("acceptance_by_position.png", "throughput_on_off.png"):
        assert (tmp_path / png).read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize(
    "args, message",
    [
        (("--trace", "t.jsonl"), "needs --url and --mode"),
        (("--url", "http://127.0.0.1:9", "--mode", "on"), "needs --trace or --speed-bench"),
        (("--url", "http://127.0.0.1:9", "--mode", "on", "--speed-bench", "/nonexistent"), "does not exist"),
        (("--url", "http://127.0.0.1:9", "--mode", "on", "--trace", "/nonexistent.jsonl"), "cannot read"),
    ],
)
def test_bench_errors_are_one_line(args, message):
    proc = _cli(*args)
    assert proc.returncode == 2 and message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_report_only_without_runs(tmp_path):
    proc = _cli("--report-only", "--out", str(tmp_path))
    assert proc.returncode == 2 and "no finished runs" in proc.stderr


def test_unknown_speed_bench_category(tmp_path):
    (tmp_path / "qualitative.jsonl").write_text("{}\n")
    proc = _cli("--url", "http://127.0.0.1:9", "--mode", "on", "--speed-bench", str(tmp_path), "--categories", "math,cooking")
    assert proc.returncode == 2 and "unknown categories ['cooking']" in proc.stderr
