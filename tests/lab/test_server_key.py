"""The lab and a server's API key (nim_specdec_lab.server_key): simulate's replay carries VLLM_API_KEY to a
server started with --api-key and names the variable on a 401; bench --url refuses a keyed server before
AIPerf runs (AIPerf takes a key only on its command line); the servers tune and bench --serve start go
without the key. The server here keeps vLLM's rule: every /v1 path needs one of its keys."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from pydantic import SecretStr

from nim_specdec.errors import ConfigError
from nim_specdec_lab.server_key import KEY_VAR, key_headers, keyless, server_key

KEY = "lab-key-4c1d"
# The launcher's NIM endpoints answer without a key (nim_specdec.server.endpoints); vLLM's own /v1 paths need one.
OPEN = {"/v1/specdec/config", "/v1/health/ready", "/v1/health/live", "/v1/metrics", "/v1/version", "/v1/metadata"}


class _KeyedServer:
    """/v1/models and the completions, answering with token ids, and the NIM endpoints (open, 404 here);
    `keys`: vLLM's --api-key (none: every path open)."""

    def __init__(self, keys: tuple[str, ...] = (KEY,)) -> None:
        self.seen: list[tuple[str, str | None]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def _send(self, status: int, payload: dict) -> None:
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _allowed(self) -> bool:
                given = self.headers.get("authorization")
                outer.seen.append((self.path, given))
                if self.path in OPEN:
                    self._send(404, {"error": "not served here"})
                    return False
                if keys and given not in {f"Bearer {k}" for k in keys}:
                    # A hostile server could echo what it was sent: the message must not carry it.
                    self._send(401, {"error": f"Unauthorized (you sent {given})"})
                    return False
                return True

            def do_GET(self) -> None:
                if self._allowed():
                    self._send(200, {"data": [{"id": "m", "max_model_len": 64}]})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if self._allowed():
                    wanted = int(body.get("max_tokens") or 6)
                    output = [(5 + i % 3) for i in range(wanted)]
                    self._send(200, {"prompt_token_ids": [1, 2, 3], "choices": [{"token_ids": output}]})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def keyed():
    server = _KeyedServer()
    yield server
    server.close()


@pytest.fixture
def trace(tmp_path) -> Path:
    path = tmp_path / "trace.jsonl"
    rows = [{"timestamp": i, "payload": {"model": "m", "prompt": f"p{i}", "max_tokens": 6}} for i in range(3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _cli(*args: str, key: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != KEY_VAR}
    if key is not None:
        env[KEY_VAR] = key
    return subprocess.run(
        [sys.executable, "-m", "nim_specdec", *args], env=env, capture_output=True, text=True, timeout=120
    )


def test_simulate_replays_with_the_key_in_vllm_api_key(keyed, trace, tmp_path):
    records = tmp_path / "records.jsonl"
    done = _cli("simulate", "--trace", str(trace), "--url", keyed.url, "--save-records", str(records), key=KEY)
    assert done.returncode == 0, done.stderr
    assert len(records.read_text().splitlines()) == 3
    # Every request to vLLM's paths carried the key: the model lookup, each replay and each continuation.
    keyed_paths = [(path, given) for path, given in keyed.seen if path not in OPEN]
    assert {given for _, given in keyed_paths} == {f"Bearer {KEY}"}
    assert {path for path, _ in keyed_paths} == {"/v1/models", "/v1/completions"}
    assert KEY not in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("key", "message"),
    [
        (None, "answered 401: it wants an API key, and VLLM_API_KEY is unset"),
        ("wrong-key-77", "answered 401: the server refused the key in VLLM_API_KEY"),
        ("   ", "answered 401: it wants an API key, and VLLM_API_KEY is unset"),  # blank is unset
    ],
)
def test_simulate_on_a_401_names_vllm_api_key_in_one_line(keyed, trace, key, message):
    done = _cli("simulate", "--trace", str(trace), "--url", keyed.url, key=key)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nim-specdec: error: VLLM_API_KEY: "), done.stderr
    assert message in lines[0] and "set VLLM_API_KEY to one of the server's keys" in lines[0]
    # Neither the key sent nor the server's echo of it is printed.
    assert "wrong-key-77" not in done.stderr and "Unauthorized" not in done.stderr
    # Refused at the model lookup: nothing replayed.
    assert [path for path, _ in keyed.seen if path not in OPEN] == ["/v1/models"]


def test_simulate_against_an_open_server_with_a_key_set_still_replays(trace, tmp_path):
    server = _KeyedServer(keys=())
    try:
        done = _cli("simulate", "--trace", str(trace), "--url", server.url, key=KEY)
    finally:
        server.close()
    assert done.returncode == 0, done.stderr


def test_bench_url_refuses_a_keyed_server_before_aiperf_runs(keyed, trace, tmp_path):
    marker = tmp_path / "aiperf-ran"
    aiperf = tmp_path / "aiperf"
    aiperf.write_text(f"#!/bin/sh\ntouch {marker}\nexit 0\n")
    aiperf.chmod(aiperf.stat().st_mode | stat.S_IXUSR)
    for key in (None, KEY):
        done = _cli(
            "bench", "--url", keyed.url, "--mode", "on", "--trace", str(trace), "--aiperf", str(aiperf),
            "--out", str(tmp_path / "out"), key=key,
        )  # fmt: skip
        assert done.returncode == 2, done.stderr
        line = done.stderr.strip().splitlines()[-1]
        assert line.startswith("nim-specdec: error: bench --url: ") and "wants an API key" in line, done.stderr
        assert "AIPerf takes a key only on its command line" in line and KEY not in done.stderr
    assert not marker.exists()


@pytest.mark.parametrize("command", [["tune", "--trace", "T"], ["bench", "--serve", "--trace", "T"]])
@pytest.mark.parametrize("flag", [["--api-key", "k1", "k2"], ["--api-key=k1"]])
def test_tune_and_bench_serve_refuse_api_key_among_the_vllm_arguments(command, flag, trace, tmp_path):
    args = [a if a != "T" else str(trace) for a in command]
    done = _cli(*args, "--out", str(tmp_path / "out"), "--", "--max-model-len", "64", *flag)
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert "--api-key is among the vLLM arguments; drop it" in line and "listen on 127.0.0.1 only" in line
    assert "k1" not in done.stderr
    assert not (tmp_path / "out" / "logs").exists()  # no server was started


# keyless: what the servers tune and bench --serve start get.
@pytest.mark.parametrize(
    ("env", "args", "kept", "noted"),
    [
        ({"A": "1", KEY_VAR: KEY}, [], {"A": "1"}, True),
        ({"A": "1"}, ["--max-model-len", "64"], {"A": "1"}, False),
        ({KEY_VAR: ""}, [], {}, True),  # set but empty: still left out, vLLM would read it
        ({"A": "1"}, ["--api-keys-file", "x"], {"A": "1"}, False),  # another option, not --api-key
    ],
)
def test_keyless_drops_the_variable_and_says_so(env, args, kept, noted):
    env_out, note = keyless(env, args, "tune")
    assert env_out == kept and (note is not None) == noted
    if note:
        assert note.startswith("VLLM_API_KEY is left out of the servers tune starts")
    assert env == {**env}  # the given mapping is not changed


@pytest.mark.parametrize("args", [["--api-key", "x"], ["--api-key=x"], ["--seed", "0", "--api-key", "a", "b"]])
def test_keyless_refuses_api_key_arguments(args):
    with pytest.raises(ConfigError) as err:
        keyless({}, args, "bench --serve")
    assert err.value.where == "bench --serve" and "x" not in err.value.one_line().split(";")[0].split("--api-key")[1]


def test_server_key_hides_its_value():
    key = server_key({KEY_VAR: KEY})
    assert isinstance(key, SecretStr) and KEY not in repr(key) and KEY not in str(key)
    assert key_headers(key) == {"Authorization": f"Bearer {KEY}"}
    assert server_key({}) is None and server_key({KEY_VAR: " "}) is None and key_headers(None) == {}
