"""Table-driven tests of the spec-decode counter parsing and figures (pure functions, no server)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from nim_specdec.engines.vllm.observe.spec_counters import (
    INACTIVE,
    SpecCounters,
    difference,
    figures,
    parse_aiperf_export,
    parse_prometheus,
    render_text,
    report,
)


def scrape(model: str = "m", drafts=66, draft_tokens=180, accepted=81, per_pos=(39, 24, 18), engine="0") -> str:
    lines = [
        "# HELP vllm:spec_decode_num_drafts Number of spec decoding drafts.",
        "# TYPE vllm:spec_decode_num_drafts counter",
        f'vllm:spec_decode_num_drafts_total{{engine="{engine}",model_name="{model}"}} {drafts}',
        f'vllm:spec_decode_num_drafts_created{{engine="{engine}",model_name="{model}"}} 1.7e9',
        "# TYPE vllm:spec_decode_num_draft_tokens counter",
        f'vllm:spec_decode_num_draft_tokens_total{{engine="{engine}",model_name="{model}"}} {draft_tokens}',
        "# TYPE vllm:spec_decode_num_accepted_tokens counter",
        f'vllm:spec_decode_num_accepted_tokens_total{{engine="{engine}",model_name="{model}"}} {accepted}',
        "# TYPE vllm:spec_decode_num_accepted_tokens_per_pos counter",
    ]
    for pos, value in enumerate(per_pos):
        lines.append(
            f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="{engine}",model_name="{model}",position="{pos}"}} {value}'  # noqa: E501
        )
    return "\n".join(lines) + "\n"


UNRELATED = '# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name="m"} 0.0\n'


@pytest.mark.parametrize(
    "text, expected",
    [
        (scrape(), {"m": SpecCounters(66, 180, 81, (39, 24, 18))}),
        (UNRELATED, {}),
        ("", {}),
        (scrape(per_pos=()), {"m": SpecCounters(66, 180, 81, ())}),
        (
            scrape("a") + scrape("b", 1, 3, 3, (1, 1, 1)),
            {"a": SpecCounters(66, 180, 81, (39, 24, 18)), "b": SpecCounters(1, 3, 3, (1, 1, 1))},
        ),
    ],
)
def test_parse_prometheus(text, expected):
    assert parse_prometheus(text) == expected


def test_two_engines_are_summed_and_created_samples_ignored():
    # A second engine's samples sit in the same family blocks; `_created` samples are timestamps, not counts.
    merged = []
    for line in scrape(engine="0").splitlines():
        merged.append(line)
        if line.startswith("vllm:"):
            merged.append(line.replace('engine="0"', 'engine="1"'))
    assert parse_prometheus("\n".join(merged) + "\n")["m"] == SpecCounters(132, 360, 162, (78, 48, 36))


@pytest.mark.parametrize(
    "counters, expected",
    [
        (
            SpecCounters(66, 180, 81, (39, 24, 18)),
            {
                "status": "active",
                "acceptance_rate": 81 / 180,
                "acceptance_length": 1 + 81 / 66,
                "per_position_rate": [39 / 66, 24 / 66, 18 / 66],
            },
        ),
        (
            SpecCounters(10, 30, 30, (10, 10, 10)),
            {
                "status": "active",
                "acceptance_rate": 1.0,
                "acceptance_length": 4.0,
                "per_position_rate": [1.0, 1.0, 1.0],
            },
        ),
        (
            SpecCounters(10, 30, 0, (0, 0, 0)),
            {
                "status": "active",
                "acceptance_rate": 0.0,
                "acceptance_length": 1.0,
                "per_position_rate": [0.0, 0.0, 0.0],
            },
        ),
        (SpecCounters(), {"status": INACTIVE}),
        (SpecCounters(0, 0, 0, (0, 0)), {"status": INACTIVE}),
    ],
)
def test_figures(counters, expected):
    result = figures(counters)
    for key, value in expected.items():
        assert result[key] == pytest.approx(value)
    if expected["status"] == INACTIVE:
        assert "acceptance_rate" not in result


@pytest.mark.parametrize(
    "now, earlier, expected",
    [
        (
            {"m": SpecCounters(66, 180, 81, (39, 24, 18))},
            {"m": SpecCounters(6, 18, 9, (4, 3, 2))},
            {"m": SpecCounters(60, 162, 72, (35, 21, 16))},
        ),
        ({"m": SpecCounters(5, 15, 5, (5,))}, {}, {"m": SpecCounters(5, 15, 5, (5,))}),
        (
            {"m": SpecCounters(5, 15, 5, (3, 2))},
            {"m": SpecCounters(1, 3, 1, (1,))},
            {"m": SpecCounters(4, 12, 4, (2, 2))},
        ),
        ({}, {"m": SpecCounters(1, 3, 1, (1,))}, {}),
    ],
)
def test_difference(now, earlier, expected):
    assert difference(now, earlier) == expected


def aiperf_export(model="demo", engine="0"):
    def series(total, **labels):
        return {"labels": {"engine": engine, "model_name": model, **labels}, "stats": {"total": total, "avg": 1.0}}

    return {
        "metrics": {
            "vllm:spec_decode_num_drafts": {"type": "counter", "series": [series(31)]},
            "vllm:spec_decode_num_draft_tokens": {"type": "counter", "series": [series(93)]},
            "vllm:spec_decode_num_accepted_tokens": {"type": "counter", "series": [series(62)]},
            "vllm:spec_decode_num_accepted_tokens_per_pos": {
                "type": "counter",
                "series": [series(25, position="0"), series(20, position="1"), series(17, position="2")],
            },
            "vllm:num_requests_running": {"type": "gauge", "series": [{"labels": {}, "stats": {"avg": 0.5}}]},
        }
    }


@pytest.mark.parametrize(
    "data, expected",
    [
        (aiperf_export(), {"demo": SpecCounters(31, 93, 62, (25, 20, 17))}),
        ({"metrics": {}}, {}),
        ({}, {}),
        ({"metrics": {"vllm:spec_decode_num_drafts": {"series": [{"labels": {"model_name": "x"}, "stats": {}}]}}}, {}),
    ],
)
def test_parse_aiperf_export(data, expected):
    assert parse_aiperf_export(data) == expected


def test_render_text_inactive_and_active():
    assert render_text(report({})) == INACTIVE + " (no drafts counted)\n"
    assert render_text(report({"m": SpecCounters()})).startswith(INACTIVE)
    text = render_text(report({"m": SpecCounters(10, 30, 15, (8, 5, 2))}))
    assert "acceptance rate    0.5000" in text and "acceptance length  2.5000" in text
    assert "0:0.8000 1:0.5000 2:0.2000" in text


def run_cli(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "nim_specdec", "report", *args], capture_output=True, text=True, cwd=cwd, timeout=60
    )


def test_cli_reads_aiperf_export(tmp_path):
    path = tmp_path / "server_metrics_export.json"
    path.write_text(json.dumps(aiperf_export()))
    done = run_cli("--aiperf-export", str(path), "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)["demo"]
    assert result["acceptance_rate"] == pytest.approx(62 / 93)
    assert result["acceptance_length"] == pytest.approx(1 + 62 / 31)


@pytest.mark.parametrize(
    "args, code, words",
    [
        (["--aiperf-export", "/nonexistent/export.json"], 2, "cannot read"),
        (["--url", "http://127.0.0.1:9/v1/metrics"], 4, "cannot read http://127.0.0.1:9/v1/metrics"),
        (["--url", "not a url"], 2, "is not an http:// or https:// URL"),
    ],
)
def test_cli_bad_input_is_one_line(args, code, words):
    done = run_cli(*args)
    assert done.returncode == code
    assert words in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_cli_bad_json_export(tmp_path):
    path = tmp_path / "x.json"
    path.write_text("{not json")
    done = run_cli("--aiperf-export", str(path))
    assert done.returncode == 2 and "invalid JSON" in done.stderr and "Traceback" not in done.stderr


VLLM_STYLE = """\
# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="/m"} 23.0
# HELP vllm:spec_decode_num_drafts_created Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_created gauge
vllm:spec_decode_num_drafts_created{engine="0",model_name="/m"} 1.7960185161672285e+09
# TYPE vllm:spec_decode_num_draft_tokens_total counter
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="/m"} 69.0
# TYPE vllm:spec_decode_num_accepted_tokens_total counter
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="/m"} 12.0
# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="/m",position="0"} 7.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="/m",position="2"} 2.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="/m",position="1"} 3.0
"""


def test_parse_vllm_style_type_lines():
    # vLLM names the family after the _total sample; positions may come in any order.
    assert parse_prometheus(VLLM_STYLE) == {"/m": SpecCounters(23, 69, 12, (7, 3, 2))}
