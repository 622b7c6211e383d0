"""SGLang's speculative metrics in `nim-specdec report`: a recorded /metrics page written from SGLang's source
(tests/engines/sglang/data/sglang_metrics.txt names the file and commit) read into vLLM's units."""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from nim_specdec.engines.sglang import counters as sg
from nim_specdec.engines.vllm.observe.spec_counters import parse_prometheus

RECORDED = (Path(__file__).parent / "data" / "sglang_metrics.txt").read_text()
MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def test_the_recorded_page_is_detected_as_sglang_and_holds_no_vllm_counters() -> None:
    assert sg.is_sglang(RECORDED)
    assert parse_prometheus(RECORDED) == {}  # vLLM's reader finds nothing: without SGLang's, report said inactive
    vllm = '# TYPE vllm:spec_decode_num_drafts counter\nvllm:spec_decode_num_drafts_total{model_name="m"} 3\n'
    assert not sg.is_sglang(vllm)


def test_figures_in_vllms_units() -> None:
    [(model, entry)] = sg.report(sg.parse_sglang(RECORDED)).items()
    assert model == MODEL and entry["status"] == "active" and entry["engine"] == "sglang"
    assert entry["drafts"] == 199  # verify calls, one per draft as vLLM's num_drafts
    assert entry["acceptance_length"] == pytest.approx((600 - 3) / 199)  # both streaming label sets summed
    assert entry["accepted_tokens"] == 600 - 3 - 199
    assert entry["acceptance_rate"] == pytest.approx(0.6333)  # SGLang's own gauge
    assert entry["draft_tokens_per_verify"] == 4.0
    assert entry["acceptance_length_gauge"] == pytest.approx(2.9)


def _grown(verify: float, generation: float, requests: float) -> str:
    """The recorded page later: the non-streaming counters and the verify calls moved on."""
    series = f'is_streaming="false",model_name="{MODEL}"}}'
    text = RECORDED.replace("} 199.0", f"}} {verify}")
    text = text.replace(f"{series} 400.0", f"{series} {generation}")
    return text.replace(f"{series} 2.0", f"{series} {requests}")


@pytest.mark.parametrize(
    "later, expected_length, status",
    [
        (_grown(299, 602, 3), (202 - 1) / 100, "active"),  # 100 verify steps gave 201 tokens after 1 prefill
        (RECORDED, None, "speculative decoding inactive"),  # nothing between the scrapes: no division
    ],
)
def test_since_reports_the_growth(later: str, expected_length, status: str) -> None:
    grown = sg.difference(sg.parse_sglang(later), sg.parse_sglang(RECORDED))
    entry = sg.report(grown)[MODEL]
    assert entry["status"] == status
    assert entry.get("acceptance_length") == (None if expected_length is None else pytest.approx(expected_length))


def test_a_counter_that_went_down_is_named() -> None:
    grown = sg.difference(sg.parse_sglang(RECORDED), sg.parse_sglang(_grown(299, 602, 3)))
    assert "verify calls went down by 100" in sg.counters_problem(grown, since=True)


def _serve(body: bytes):
    class Metrics(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the handler API's name
            self.send_response(200)
            self.send_header("content-type", "text/plain; version=0.0.4")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Metrics)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.parametrize("as_json", [True, False])
def test_report_command_reads_sglang(as_json: bool, tmp_path: Path) -> None:
    server = _serve(_grown(299, 602, 3).encode())
    try:
        since = tmp_path / "earlier.txt"
        since.write_text(RECORDED)
        url = f"http://127.0.0.1:{server.server_address[1]}/metrics"
        done = subprocess.run(
            [sys.executable, "-m", "nim_specdec", "report", "--url", url, "--since", str(since)]
            + (["--json"] if as_json else []),
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        server.shutdown()
        server.server_close()
    assert done.returncode == 0, done.stderr
    if as_json:
        entry = json.loads(done.stdout)[MODEL]
        assert entry["acceptance_length"] == pytest.approx(2.01) and entry["drafts"] == 100
    else:
        assert f"model {MODEL} (SGLang)" in done.stdout
        assert "acceptance length  2.0100" in done.stdout and "acceptance rate    0.6333" in done.stdout
