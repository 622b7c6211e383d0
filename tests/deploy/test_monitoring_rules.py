"""The monitoring rules and dashboard against a real server: every metric they read is one the
CPU vLLM server exports at /v1/metrics, and the recording rules, evaluated by promtool on real
scrapes (of the shared ngram run) taken 5 minutes apart (as Prometheus would), give what `nim-specdec report --since`
gives for the same pair of scrapes."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml
from cpu_scrapes import Scrapes
from promtool_case import metric_names, samples, write_case

pytestmark = pytest.mark.e2e

MONITORING = Path(__file__).resolve().parents[2] / "deploy" / "monitoring"
RULES = MONITORING / "nim-specdec.rules.yaml"
DASHBOARD = MONITORING / "nim-specdec-dashboard.json"


def promtool() -> str:
    found = os.environ.get("PROMTOOL") or shutil.which("promtool")
    assert found, "promtool not found: run `make lint` once (it unpacks Debian's prometheus package) or set PROMTOOL"
    return found


def rules() -> list[dict]:
    return [rule for group in yaml.safe_load(RULES.read_text())["groups"] for rule in group["rules"]]


def dashboard_expressions() -> list[str]:
    board = json.loads(DASHBOARD.read_text())
    exprs = [target["expr"] for panel in board["panels"] for target in panel["targets"]]
    exprs += [var["definition"] for var in board["templating"]["list"] if var["type"] == "query"]
    return exprs


@pytest.fixture(scope="session")
def scrapes(ngram_run) -> Scrapes:
    return ngram_run.probe("monitoring_scrapes")


def test_smoke_script_passes_with_speculation_on(scrapes: Scrapes) -> None:
    smoke = scrapes.smoke
    assert smoke.returncode == 0, f"scripts/smoke.sh failed ({smoke.returncode}):\n{smoke.stdout}\n{smoke.stderr}"
    report = smoke.stdout.split("--- nim-specdec report", 1)[1]
    assert "acceptance rate" in report and scrapes.model in report


def test_every_metric_read_is_exported_or_recorded(scrapes: Scrapes) -> None:
    exported = {series.split("{", 1)[0] for series in samples(scrapes.second)}
    recorded = {rule["record"] for rule in rules()}
    used = set().union(*(metric_names(rule["expr"]) for rule in rules()), *map(metric_names, dashboard_expressions()))
    assert {"vllm:spec_decode_num_accepted_tokens_per_pos_total", "vllm:generation_tokens_total"} <= used
    missing = sorted(name for name in used if name not in exported and name not in recorded)
    assert not missing, f"not exported by the CPU server and not recorded: {missing}"
    # The dashboard draws the acceptance figures from the recording rules.
    dashboard_names = set().union(*map(metric_names, dashboard_expressions()))
    assert {r for r in recorded if "acceptance" in r} <= dashboard_names


def _report_since(first: str, second: str, workdir: Path) -> dict:
    """`nim-specdec report --url ... --since FILE --json`, the second scrape served on loopback."""
    body = second.encode()

    class Metrics(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the handler API's name
            self.send_response(200)
            self.send_header("content-type", "text/plain; version=0.0.4")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Metrics)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        since = workdir / "first.txt"
        since.write_text(first)
        url = f"http://127.0.0.1:{server.server_address[1]}/v1/metrics"
        done = subprocess.run(
            [sys.executable, "-m", "nim_specdec", "report", "--url", url, "--since", str(since), "--json"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        server.shutdown()
        server.server_close()
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("pair", ["before-first", "first-second", "second-second"])
def test_rules_compute_what_report_computes(scrapes: Scrapes, pair: str, tmp_path: Path) -> None:
    first, second = (getattr(scrapes, name) for name in pair.split("-"))
    report = _report_since(first, second, tmp_path)
    assert scrapes.model in report
    expected_active = pair != "second-second"  # no traffic between identical scrapes
    assert (report[scrapes.model]["status"] == "active") is expected_active
    names = set().union(*(metric_names(rule["expr"]) for rule in rules()))
    case = write_case(tmp_path / "case.yaml", RULES, first, second, report, names)
    done = subprocess.run([promtool(), "test", "rules", str(case)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
