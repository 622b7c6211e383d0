"""`report` and the smoke check on counters and answers a hostile server could send: counters that are not
finite or went down are exit 4 with the reason; `--json` is always valid JSON; server text is escaped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from test_http_bounds import HEAD, SRC, HostileServer

from nim_specdec.engines.protocol.serving import result_problem
from nim_specdec.engines.vllm.observe.spec_counters import SpecCounters, counters_problem, figures
from nim_specdec.errors import EXIT_UNREACHABLE

DRAFTS = "vllm:spec_decode_num_drafts_total"
TOKENS = "vllm:spec_decode_num_draft_tokens_total"
ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"


def metrics(drafts: str = "10", tokens: str = "30", accepted: str = "12", model: str = "m", engines: int = 1) -> str:
    lines = []
    for engine in range(engines):
        labels = f'{{engine="{engine}",model_name="{model}"}}'
        lines += [f"{DRAFTS}{labels} {drafts}", f"{TOKENS}{labels} {tokens}", f"{ACCEPTED}{labels} {accepted}"]
    return "\n".join(lines) + "\n"


POSITION = 'vllm:spec_decode_num_accepted_tokens_per_pos_total{{model_name="m",position="{p}"}} {v}\n'


def sglang(verify="10", tokens="40", requests="2", rate="0.5", length="2.8") -> str:
    return (
        f'sglang:spec_verify_calls_total{{model_name="m"}} {verify}\n'
        f'sglang:generation_tokens_total{{model_name="m"}} {tokens}\n'
        f'sglang:num_requests_total{{model_name="m"}} {requests}\n'
        f'sglang:spec_accept_rate{{model_name="m"}} {rate}\n'
        f'sglang:spec_accept_length{{model_name="m"}} {length}\n'
    )


def answering(body: str):
    data = body.encode("utf-8", "surrogateescape")

    def behaviour(conn, end):
        conn.sendall(HEAD + f"Content-Length: {len(data)}\r\n\r\n".encode() + data)

    return behaviour


def report_cli(*args: str):
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.run(
        [sys.executable, "-m", "nim_specdec", "report", *args], env=env, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    "counters,since,fragment",
    [
        (SpecCounters(drafts=float("inf")), False, "drafts is inf, not a finite count"),
        (SpecCounters(drafts=float("nan")), False, "not a finite count"),
        (SpecCounters(accepted=-3), False, "accepted is -3, not a count"),
        (SpecCounters(drafts=5, draft_tokens=-2), True, "draft tokens went down by 2"),
        (SpecCounters(per_position=(1.0, -1.0)), True, "accepted at position 1 went down by 1"),
    ],
)
def test_counters_problem_names_the_count_and_why(counters, since, fragment):
    problem = counters_problem({"m": counters}, since=since)
    assert problem is not None and fragment in problem and "model m" in problem


def test_good_counters_have_no_problem_and_a_huge_ratio_is_caught_before_printing():
    assert counters_problem({"m": SpecCounters(drafts=10, draft_tokens=30, accepted=12)}) is None
    result = {"m": figures(SpecCounters(drafts=1e-300, draft_tokens=1e-300, accepted=1e300))}
    assert result_problem(result) == "model m: acceptance_rate is not a finite number"


@pytest.mark.parametrize(
    "body,fragment",
    [
        (metrics(drafts="1e308", engines=2), "not a finite count"),  # two finite counters whose sum overflows
        (metrics(accepted="-5"), "accepted is -5"),
        (metrics(drafts="1e-300", tokens="1e-300", accepted="1e300"), "is not a finite number"),
        (metrics(drafts="NaN"), "not a count"),
        # counts each fine alone that contradict each other (a fifth round's class: only ranges were checked)
        (metrics(tokens="30", accepted="300"), "acceptance_rate is 10, not in [0, 1]"),
        (metrics(drafts="10", tokens="30", accepted="12") + POSITION.format(p=0, v=40), "per_position_rate is 4"),
        (sglang(verify="100", tokens="10", requests="1"), "accepted_tokens is -91, not >= 0"),
        (sglang(rate="7.5"), "acceptance_rate_gauge is 7.5, not in [0, 1]"),
        (sglang(length="-3"), "acceptance_length_gauge is -3, not >= 1"),
        ("\x00\xff{{{ not prometheus\n", "not Prometheus text"),
        ("<html>\x1b[2J<body>oops</body></html>", "not Prometheus text"),
    ],
)
@pytest.mark.parametrize("as_json", [False, True])
def test_report_on_hostile_counters_is_exit_4_one_line_and_never_bad_json(body, fragment, as_json):
    server = HostileServer(answering(body))
    done = report_cli("--url", server.url, *(["--json"] if as_json else []))
    assert done.returncode == EXIT_UNREACHABLE and fragment in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "\x1b" not in done.stderr and done.stdout == ""


def test_report_since_a_later_scrape_says_the_counters_went_down(tmp_path):
    saved = tmp_path / "before.txt"
    saved.write_text(metrics(drafts="100", tokens="300", accepted="120"))
    server = HostileServer(answering(metrics()))
    done = report_cli("--url", server.url, "--since", str(saved), "--json")
    assert done.returncode == EXIT_UNREACHABLE and "drafts went down by 90" in done.stderr, done.stderr


def test_report_json_of_good_counters_is_strict_json():
    server = HostileServer(answering(metrics(model="m\x1b[2J")))
    done = report_cli("--url", server.url, "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout, parse_constant=lambda name: pytest.fail(f"{name} in --json"))
    assert result["m\x1b[2J"]["acceptance_rate"] == pytest.approx(0.4) and "\x1b" not in done.stdout


class _Hostile(BaseHTTPRequestHandler):
    """Ready, a model id and error bodies full of terminal commands, and counters that went down."""

    calls = {"metrics": 0}

    def _answer(self, status: int, body: str, kind: str = "application/json") -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # noqa: N802 - http.server's name
        if self.path == "/v1/health/ready":
            self._answer(200, "{}")
        elif self.path == "/v1/models":
            self._answer(200, json.dumps({"data": [{"id": "m\x1b[2J\nFORGED"}]}))
        else:
            type(self).calls["metrics"] += 1
            drafts = "50" if type(self).calls["metrics"] == 1 else "10"
            self._answer(200, metrics(drafts=drafts), "text/plain")

    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self._answer(500, json.dumps({"error": "\x1b]0;pwned\x07\x1b[31m"}))

    def log_message(self, *args):
        pass


def test_smoke_escapes_what_the_server_says_and_refuses_counters_that_went_down():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        env = {**os.environ, "PYTHONPATH": str(SRC)}
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "nim_specdec.observe.smoke",
                f"http://127.0.0.1:{server.server_address[1]}",
                "--deadline",
                "20",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        server.shutdown()
    assert done.returncode == EXIT_UNREACHABLE, done.stderr
    assert "\x1b" not in done.stderr + done.stdout and "\x07" not in done.stderr
    assert "drafts went down by 40" in done.stderr, done.stderr
    assert "answered 500" in done.stderr and "\\x1b]0;pwned\\x07" in done.stderr, done.stderr
    assert all(line.startswith("smoke: ") for line in done.stderr.splitlines())
