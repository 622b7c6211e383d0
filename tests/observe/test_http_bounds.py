"""Every read of a server has an overall deadline and a size cap: a trickling or endless answer, or counters
that would make the report allocate without bound, end as one line with exit 4."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from nim_specdec.engines.vllm.observe.spec_counters import MAX_POSITIONS, parse_prometheus
from nim_specdec.errors import EXIT_UNREACHABLE, UnreachableError
from nim_specdec.observe.http_client import request

SRC = Path(__file__).resolve().parents[2] / "src"
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"


class HostileServer:
    """A loopback server that answers every connection with `behaviour(conn)`; stops by itself after `life` s."""

    def __init__(self, behaviour, life: float = 20.0) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1/metrics"
        self.behaviour, self.end = behaviour, time.monotonic() + life
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while time.monotonic() < self.end:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()
        self.sock.close()

    def _answer(self, conn: socket.socket) -> None:
        try:
            conn.recv(65536)
            self.behaviour(conn, self.end)
        except OSError:
            pass
        finally:
            conn.close()


def trickle(conn: socket.socket, end: float) -> None:
    conn.sendall(HEAD + b"\r\n")
    while time.monotonic() < end:
        conn.sendall(b"#")
        time.sleep(0.2)


def trickle_headers(conn: socket.socket, end: float) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\n")
    while time.monotonic() < end:
        conn.sendall(b"X-A: b\r\n")
        time.sleep(0.1)


def endless(conn: socket.socket, end: float) -> None:
    conn.sendall(HEAD + b"\r\n")
    block = b"x" * 65536
    while time.monotonic() < end:
        conn.sendall(block)


def big_position(conn: socket.socket, end: float) -> None:
    body = (
        b'vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name="m",position="999999999"} 1\n'
        b'vllm:spec_decode_num_drafts_total{model_name="m"} 1\n'
    )
    conn.sendall(HEAD + b"Content-Length: %d\r\n\r\n" % len(body) + body)


@pytest.mark.parametrize("behaviour", [trickle, trickle_headers])
def test_a_trickling_server_is_cut_at_the_deadline(behaviour):
    server = HostileServer(behaviour)
    started = time.monotonic()
    with pytest.raises(UnreachableError, match="did not answer in full within 1 s"):
        request(server.url, where="--url", deadline=1.0)
    assert time.monotonic() - started < 5


def test_an_endless_answer_is_cut_at_the_size_cap():
    server = HostileServer(endless)
    with pytest.raises(UnreachableError, match="answered more than 1 MiB"):
        request(server.url, where="--url", deadline=15.0, max_bytes=1024 * 1024)


def test_position_labels_cannot_make_the_report_allocate_without_bound():
    text = f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{model_name="m",position="{MAX_POSITIONS}"}} 1\n'
    with pytest.raises(ValueError, match="beyond"):
        parse_prometheus(text)
    with pytest.raises(ValueError, match="not a count"):
        parse_prometheus('vllm:spec_decode_num_drafts_total{model_name="m"} NaN\n')


@pytest.mark.parametrize("behaviour,words", [(trickle, "did not answer in full"), (big_position, "beyond")])
def test_report_against_a_hostile_server_exits_4_in_one_line(behaviour, words):
    server = HostileServer(behaviour)
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "nim_specdec", "report", "--url", server.url],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == EXIT_UNREACHABLE and words in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert time.monotonic() - started < 30  # the scrape's own deadline is 10 s


def test_control_characters_in_model_names_are_escaped_in_the_report(tmp_path):
    scrape = tmp_path / "m.txt"
    scrape.write_text(
        'vllm:spec_decode_num_drafts_total{model_name="a\\u001b[2J"} 1\n'
        'vllm:spec_decode_num_draft_tokens_total{model_name="a\\u001b[2J"} 1\n'
    )
    text = scrape.read_text().replace("\\u001b", "\x1b")
    scrape.write_text(text)
    from nim_specdec.engines.vllm.observe.spec_counters import render_text, report

    rendered = render_text(report(parse_prometheus(text)))
    assert "\x1b" not in rendered and "\\x1b[2J" in rendered
