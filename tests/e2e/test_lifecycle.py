"""Process and endpoint behaviour, checked on every server the suite starts (no server of its own)."""

from __future__ import annotations

import http.client
import json
import re
import threading
import time
import urllib.parse

import pytest

from nim_specdec.config.settings import DEFAULT_SHUTDOWN_TIMEOUT
from nim_specdec.engines.vllm.observe.spec_counters import parse_prometheus
from nim_specdec.observe.smoke import http_get
from vllm_runs import MAX_MODEL_LEN, STOP_TIMEOUT_S, stop_probe
from vllm_workload import PROMPTS

pytestmark = pytest.mark.e2e

RUNS = ("ngram_run", "off_run", "eagle3_run", "remote_run")
SERVER_MODULE = "vllm.entrypoints.openai.api_server"
BOOT_MODULE = "nim_specdec.engines.vllm.boot.vllm_boot"


@pytest.fixture(params=RUNS)
def run(request):
    return request.getfixturevalue(request.param)


def test_launcher_pid_became_vllm(run):
    # The pid the launcher was started as runs the vLLM server: the launcher exec'd, no wrapper stayed.
    # With local files the check runs in that process first (vllm_boot), then vLLM's server module in
    # the same Python; the remote run was checked while it downloaded, so it runs the server directly.
    cmdline = run.stop.cmdline_before
    if run.name == "remote":
        assert cmdline[1:3] == ["-m", SERVER_MODULE], f"{cmdline}" + run.context()
        assert "nim-specdec: vLLM check while downloading" in run.log and "vLLM check passed" not in run.log
    else:
        assert cmdline[1:3] == ["-m", BOOT_MODULE] and cmdline[4:6] == ["-m", SERVER_MODULE], (
            f"{cmdline}" + run.context()
        )
        assert "nim-specdec: vLLM check passed in" in run.log
    assert f"(APIServer pid={run.stop.pid})" in run.log


def test_sigterm_stops_the_server_cleanly(run):
    stop = run.stop
    assert not stop.killed, f"still running {STOP_TIMEOUT_S:.0f} s after SIGTERM" + run.context()
    assert stop.returncode == 0, f"exit code {stop.returncode} after SIGTERM" + run.context()
    assert stop.group_gone, "engine processes outlived the server" + run.context()
    assert "[shutdown] API server: shutdown triggered" in run.log


def test_ready_is_refused_or_503_until_the_model_answers(run):
    statuses = run.ready_statuses
    assert statuses and statuses[-1] == 200, f"{statuses}" + run.context()
    assert set(statuses[:-1]) <= {0, 503}, f"before ready: {sorted(set(statuses[:-1]))}" + run.context()


def test_v1_endpoints(run):
    endpoints = run.endpoints
    assert endpoints["/v1/health/live"] == (200, '{"status": "live"}')
    assert endpoints["/v1/health/ready"][0] == 200 and '"ready"' in endpoints["/v1/health/ready"][1]
    status, text = endpoints["/v1/metrics"]
    assert status == 200 and "# TYPE" in text

    # The same Prometheus text as /metrics: the same series, scraped a moment apart.
    def names(body):
        return {line.split("{")[0].split(" ")[0] for line in body.splitlines() if line and not line.startswith("#")}

    assert names(text) == names(endpoints["/metrics"][1])
    assert parse_prometheus(text).keys() == parse_prometheus(endpoints["/metrics"][1]).keys()


# --- A rollout loses no request: SIGTERM while completions stream (the launcher's default shutdown timeout) ---
# The slowest shared server: the demo's random EAGLE3 draft has its 3 tokens rejected at nearly every step, so a
# stream of 352 tokens takes some 350 engine steps (seconds on any machine), where the n-gram run's drafts are
# accepted whole and the same stream ends in a few dozen steps.
DRAIN_RUN = "eagle3"
DRAIN_STREAMS = 3  # under the runs' --max-num-seqs 4
SAME_MOMENT = 3  # completions released with the signal, from one barrier
DRAIN_LOG = "[shutdown] EngineCore: draining in-flight requests"
DRAIN_COUNT = re.compile(r"draining in-flight requests count=(\d+)")
DRAIN_DEADLINE_S = 120.0  # for each wait of the probe: first chunk, drain logged, streams ended
REFUSED = 503  # the launcher's answer to a request the draining server did not admit (server/admission.py)


def _completion(model: str, prompt: str, stream: bool) -> str:
    body = {"model": model, "prompt": prompt, "temperature": 0, "stream": stream}
    # A stream runs to the model's length (ignore_eos), so that its length in engine steps is known.
    body.update(max_tokens=MAX_MODEL_LEN - 32, ignore_eos=True) if stream else body.update(max_tokens=8)
    return json.dumps(body)


def _connect(url: str) -> http.client.HTTPConnection:
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=DRAIN_DEADLINE_S)
    conn.connect()  # before any barrier: only the request's bytes are timed against the signal
    return conn


def _answer(conn: http.client.HTTPConnection, out: dict, first_chunk: threading.Event | None = None) -> None:
    """Reads one answer into `out`: status, Retry-After, chunks, text, finish_reason, or the transport error."""
    out.update(chunks=0, text="", finish_reason=None, error=None)
    try:
        answer = conn.getresponse()
        out.update(status=answer.status, retry_after=answer.getheader("retry-after"))
        if answer.getheader("content-type", "").startswith("text/event-stream"):
            for line in answer:
                line = line.strip()
                if not line.startswith(b"data: ") or line == b"data: [DONE]":
                    continue
                choice = json.loads(line[6:])["choices"][0]
                out["chunks"] += 1
                out["text"] += choice.get("text") or ""
                if out["chunks"] == 1:
                    out["first_chunk_at"] = time.monotonic()
                    if first_chunk is not None:
                        first_chunk.set()
                if choice.get("finish_reason"):
                    out["finish_reason"], out["finished_at"] = choice["finish_reason"], time.monotonic()
        else:
            document = json.loads(answer.read() or b"null")
            out["body"] = document
            choices = document.get("choices") if isinstance(document, dict) else None
            if choices:
                out["text"] = choices[0].get("text") or ""
                out["finish_reason"] = choices[0].get("finish_reason")
        out["ended_at"] = time.monotonic()
    except (OSError, http.client.HTTPException, ValueError) as err:
        out["error"] = f"{type(err).__name__}: {err}"
    finally:
        conn.close()


def _stream(url: str, model: str, prompt: str, out: dict, first_chunk: threading.Event) -> None:
    try:
        conn = _connect(url)
        conn.request("POST", "/v1/completions", _completion(model, prompt, True), {"Content-Type": "application/json"})
    except (OSError, http.client.HTTPException) as err:
        out.update(error=f"{type(err).__name__}: {err}", chunks=0)
        return
    _answer(conn, out, first_chunk)


def _at_the_signal(url: str, model: str, prompt: str, out: dict, barrier: threading.Barrier) -> None:
    """A completion whose request bytes leave as the barrier releases, the same instant the signal is sent."""
    try:
        conn = _connect(url)
        barrier.wait(DRAIN_DEADLINE_S)
        out["sent_at"] = time.monotonic()
        conn.request("POST", "/v1/completions", _completion(model, prompt, False), {"Content-Type": "application/json"})
    except (OSError, http.client.HTTPException, threading.BrokenBarrierError) as err:
        out.update(error=f"{type(err).__name__}: {err}", chunks=0)
        return
    _answer(conn, out)


def _wait_for(predicate, deadline_s: float, poll_s: float = 0.02) -> bool:
    """A bounded wait on a condition only a file shows (the server's log)."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(poll_s)
    return False


@stop_probe(DRAIN_RUN)
def drain(server, record, workdir, stop):
    # The completions that race the signal connect first and wait at the barrier, so that once the first chunk
    # is seen nothing stands between it and the signal but the barrier's release.
    barrier = threading.Barrier(SAME_MOMENT + 1)
    same_moment = [{} for _ in range(SAME_MOMENT)]
    racers = [
        threading.Thread(target=_at_the_signal, args=(server.url, record.model, PROMPTS[i], out, barrier), daemon=True)
        for i, out in enumerate(same_moment)
    ]
    for thread in racers:
        thread.start()
    streams = [{} for _ in range(DRAIN_STREAMS)]
    first_chunk = threading.Event()
    threads = [
        threading.Thread(
            target=_stream, args=(server.url, record.model, f"{i} {PROMPTS[i]}", out, first_chunk), daemon=True
        )
        for i, out in enumerate(streams)
    ]
    for thread in threads:
        thread.start()
    # The signal goes on an event, the first chunk of any stream: that stream is then in the engine with
    # ~350 steps to go (about 2 s on 2 cores), against the milliseconds of the barrier's release.
    assert first_chunk.wait(DRAIN_DEADLINE_S), streams
    stopped: dict = {}
    stopper = threading.Thread(target=lambda: stopped.update(code=stop(), at=time.monotonic()), daemon=True)
    barrier.wait(DRAIN_DEADLINE_S)
    sigterm_at = time.monotonic()
    stopper.start()
    drain_seen = _wait_for(lambda: DRAIN_LOG in server.log_text(), DRAIN_DEADLINE_S)
    late = {}
    sent_at = time.monotonic()
    try:
        conn = _connect(server.url)
        conn.request(
            "POST",
            "/v1/completions",
            _completion(record.model, PROMPTS[0], False),
            {"Content-Type": "application/json"},
        )
        _answer(conn, late)
    except (OSError, http.client.HTTPException) as err:
        late["error"] = f"{type(err).__name__}: {err}"
    answered_at = time.monotonic()
    ready = http_get(server.url + "/v1/health/ready", timeout=5)
    for thread in (*threads, *racers):
        thread.join(DRAIN_DEADLINE_S)
    stopper.join(STOP_TIMEOUT_S + 40)
    counts = DRAIN_COUNT.findall(server.log_text())
    result = {
        "streams": streams,
        "same_moment": same_moment,
        "sigterm_at": sigterm_at,
        "drain_seen": drain_seen,
        "engine_in_flight": int(counts[0]) if counts else None,
        "late_sent_at": sent_at,
        "late_answered_at": answered_at,
        "late": late,
        "ready_during_drain": ready[0],
        "exit_code": stopped.get("code"),
        "exited_at": stopped.get("at"),
    }
    (workdir / "drain.json").write_text(json.dumps(result, indent=1, default=str))  # kept beside the server's log
    return result


@pytest.fixture
def drained(request):
    record = request.getfixturevalue(f"{DRAIN_RUN}_run")
    result = record.probe("drain")
    return record, result


def _in_flight(result: dict) -> list[dict]:
    """The streams that had sent a chunk before SIGTERM."""
    return [out for out in result["streams"] if out.get("first_chunk_at", float("inf")) < result["sigterm_at"]]


def _refused_or_finished(out: dict) -> bool:
    """Every answer of a draining server: finished whole, refused 503 with Retry-After before it was admitted,
    or (vLLM's own refusal, when the prompt reached the engine just after it stopped admitting) aborted with no
    text. Never a 500, never a broken connection."""
    if out.get("error") is not None:
        return False
    if out.get("status") == REFUSED:
        return out.get("retry_after") is not None and out.get("chunks") == 0
    if out.get("status") != 200:
        return False
    return out["finish_reason"] in ("length", "stop") or (out["finish_reason"] == "abort" and not out["text"])


def test_sigterm_drains_streams_in_flight(drained):
    """The launcher's default --shutdown-timeout: every stream that was in flight at SIGTERM ends with its
    finish_reason (length: it runs to max_tokens), none is aborted, and the process exits 0 within the timeout."""
    record, result = drained
    assert f"mode=drain timeout={DEFAULT_SHUTDOWN_TIMEOUT}s" in record.log, record.context()
    assert result["drain_seen"], f"no '{DRAIN_LOG}' in the log: SIGTERM came after the streams ended" + record.context()
    in_flight = _in_flight(result)
    assert in_flight, f"no stream was in flight at SIGTERM: {result}" + record.context()
    # The engine's own count: what it held when the drain began, at least the streams the client saw streaming.
    assert result["engine_in_flight"] is not None and result["engine_in_flight"] >= len(in_flight), (
        f"{result}" + record.context()
    )
    for out in in_flight:
        assert out["error"] is None and out["status"] == 200, f"{out}" + record.context()
        assert result["sigterm_at"] < out["finished_at"], f"{out}" + record.context()
        assert out["finish_reason"] == "length" and out["chunks"] >= 2, f"{out}" + record.context()
    assert result["exit_code"] == 0, f"{result}" + record.context()
    took = result["exited_at"] - result["sigterm_at"]
    assert took < DEFAULT_SHUTDOWN_TIMEOUT, f"exit {took:.1f} s after SIGTERM" + record.context()


def test_no_request_is_answered_500_at_sigterm(drained):
    """Every request the server saw around the signal: the streams not yet streaming when it came, and the
    completions sent in the same instant as it (one barrier releases them and the signal) are finished or
    refused, never answered 500 (vLLM's own answer when its closed tokenizer pool meets a new request)."""
    record, result = drained
    around = [out for out in result["streams"] if out not in _in_flight(result)] + result["same_moment"]
    assert len(result["same_moment"]) == SAME_MOMENT
    for out in around:
        assert _refused_or_finished(out), f"{out}" + record.context()
    assert all("sent_at" in out for out in result["same_moment"]), f"{result}" + record.context()


def test_new_request_during_drain_is_refused(drained):
    """A request sent once the engine has logged its drain is not admitted: the launcher's middleware answers it
    503 with Retry-After at once (a load balancer retries it elsewhere), from the server that is still up. vLLM
    closes its tokenizer pool before the engine drains, so this is the launcher's door, never vLLM's 500.
    Whether the admitted streams are still running when it lands is the machine's scheduling (they end with
    their length in test_sigterm_drains_streams_in_flight); only the order of what the server logged is asserted."""
    record, result = drained
    assert result["drain_seen"] and result["sigterm_at"] < result["late_sent_at"], f"{result}" + record.context()
    assert result["exited_at"] is not None and result["late_answered_at"] < result["exited_at"], (
        f"{result}" + record.context()
    )
    late = result["late"]
    assert late.get("status") == REFUSED and late.get("retry_after") == "1", f"{late}" + record.context()
    assert late["body"]["error"]["code"] == REFUSED, f"{late}" + record.context()
    assert result["ready_during_drain"] == 200, f"{result}" + record.context()
