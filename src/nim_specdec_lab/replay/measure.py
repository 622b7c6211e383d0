"""run_replay: send a ReplaySpec's requests through AIPerf and measure what the server did meanwhile.

The server's /metrics is read before and after the run: the spec-decode counters' growth is what the
server drafted and accepted for exactly these requests (one replay at a time per server), and the
request-success counter gives progress lines while AIPerf runs.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from nim_specdec.engines.vllm.observe.spec_counters import counter_totals, parse_prometheus
from nim_specdec.errors import ConfigError, UnreachableError
from nim_specdec.files.output_files import write_atomically
from nim_specdec.files.regular_file import open_inside, read_json_inside
from nim_specdec.observe.smoke import http_get, post_json
from nim_specdec_lab.replay.aiperf_run import find_aiperf, run_aiperf
from nim_specdec_lab.replay.request_acceptance import RECORDS_JSONL, RequestAcceptance, parse_records
from nim_specdec_lab.replay.results import (
    GENERATION_TOKENS,
    PROFILE_JSON,
    REQUEST_SUCCESS,
    counter_growth,
    measurement,
    spec_config_from_metrics,
)
from nim_specdec_lab.replay.spec import (
    CHAT,
    ReplayMeasurement,
    ReplaySpec,
    aiperf_argv,
    check,
    sent_count,
    trace_text,
    warmup_bodies,
)

# Served by the launcher's middleware: the speculative config on the vLLM command line it runs.
SPEC_CONFIG_PATH = "/v1/specdec/config"
TRACE_FILE = "replay_trace.jsonl"
ARTIFACTS = "aiperf"
MEASUREMENT_JSON = "measurement.json"
# A run's measurement and AIPerf's profile hold figures per run, not per token: far below this.
MAX_RUN_JSON_BYTES = 64 * 1024 * 1024
# AIPerf's per-record export: a few KB a request.
MAX_RECORDS_BYTES = 1024 * 1024 * 1024


def scrape_metrics(url: str) -> str:
    status, text = http_get(url, timeout=30)
    if status != 200:
        detail = "no answer" if status == 0 else f"HTTP {status}"
        raise UnreachableError(
            "--url",
            f"cannot read the server's metrics at {url} ({detail})",
            "check that the server is up, the URL and --metrics-path",
        )
    return text


def _counts(text: str) -> tuple:
    return parse_prometheus(text), counter_totals(text, (REQUEST_SUCCESS, GENERATION_TOKENS))


def _settled_scrape(url: str, tries: int = 6, wait_s: float = 0.5) -> str:
    """A scrape taken once the counters stopped moving (the last requests' stats land just after them)."""
    text = scrape_metrics(url)
    for _ in range(tries):
        time.sleep(wait_s)
        again = scrape_metrics(url)
        if _counts(again) == _counts(text):
            return again
        text = again
    return text


def server_spec_config(base: str, metrics_text: str) -> dict[str, Any]:
    """The speculative config the server runs: from the launcher's endpoint, else what /metrics shows."""
    status, body = http_get(base + SPEC_CONFIG_PATH, timeout=30)
    if status == 200:
        try:
            data = json.loads(body)
        except ValueError:
            data = None
        if isinstance(data, dict) and "speculative_config" in data:
            return data
    return spec_config_from_metrics(metrics_text)


def warmup_for(concurrency: int, asked: int | None) -> int:
    """At least 2 x concurrency + 2 unmeasured requests by default: the first steps of a fresh server at a
    new batch shape are slow (tune measured the first run up to 1.5x slow with `concurrency` alone)."""
    return 2 * concurrency + 2 if asked is None else asked


def warm_up(base: str, endpoint: str, spec: ReplaySpec) -> None:
    """Send the warm-up requests, `concurrency` at a time; any failure means the replay would fail too."""
    url = base + ("/v1/chat/completions" if endpoint == CHAT else "/v1/completions")
    with ThreadPoolExecutor(max_workers=max(1, min(spec.concurrency, spec.warmup))) as pool:
        answers = list(pool.map(lambda body: post_json(url, body, timeout=600), warmup_bodies(spec)))
    for status, detail in answers:
        if status != 200:
            text = " ".join(str(detail).split())[:200]
            raise UnreachableError(
                "--url",
                f"{url} answered a warm-up request with HTTP {status or 'no answer'}: {text}",
                "check the server, --model and the captured request bodies",
            )


def requests_acceptance(spec: ReplaySpec, artifacts: Path) -> tuple[RequestAcceptance, ...] | None:
    """Each response's acceptance from AIPerf's per-record export (read a line at a time: a few KB a
    request); None where it has none."""
    labels = spec.labels or ("",) * len(spec.requests)
    try:
        with open_inside(artifacts / RECORDS_JSONL, artifacts) as fh:
            if os.fstat(fh.fileno()).st_size > MAX_RECORDS_BYTES:
                return None
            return parse_records((line.decode("utf-8", errors="replace") for line in fh), labels)
    except OSError:
        return None


def _schedule_words(spec: ReplaySpec) -> str:
    if spec.schedule == "timestamps":
        return "at the captured arrival times"
    return f"closed loop, {spec.concurrency} in flight"


def run_replay(
    spec: ReplaySpec, out_dir: Path, aiperf_bin: Path | None = None, progress: Callable[[str], None] | None = None
) -> ReplayMeasurement:
    """Replay `spec` with AIPerf, keeping its artifacts under `out_dir`; raises LauncherError subclasses."""
    say = progress or (lambda _line: None)
    endpoint = check(spec)
    aiperf = find_aiperf(aiperf_bin)
    base = spec.url.rstrip("/")
    metrics_url = base + spec.metrics_path
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        # A run that fails half-way must not leave the previous run's figures looking current.
        (out_dir / MEASUREMENT_JSON).unlink(missing_ok=True)
        if (out_dir / ARTIFACTS).exists():
            shutil.rmtree(out_dir / ARTIFACTS)
    except OSError as err:
        raise ConfigError("--out", f"cannot use {out_dir} ({err.strerror})", "choose a writable directory") from None
    scrape_metrics(metrics_url)  # reachable at all, before anything is sent
    if spec.warmup:
        say(f"replay: warming up the server with {spec.warmup} request(s), not measured")
        warm_up(base, endpoint, spec)
    before = _settled_scrape(metrics_url)
    config = server_spec_config(base, before)
    write_atomically(str(out_dir / TRACE_FILE), trace_text(spec), "--out")
    argv = aiperf_argv(
        spec, aiperf, endpoint, str((out_dir / TRACE_FILE).resolve()), str((out_dir / ARTIFACTS).resolve())
    )
    total = sent_count(spec)
    say(f"replay: {total} requests to {base}, {_schedule_words(spec)} (AIPerf log: {out_dir / 'aiperf.log'})")

    def tick(elapsed: float) -> None:
        status, text = http_get(metrics_url, timeout=5)
        try:
            done = (
                f"{counter_growth(before, text, REQUEST_SUCCESS):.0f}/{total} answered"
                if status == 200
                else "metrics unreadable"
            )
        except ValueError:
            done = "metrics unreadable"
        say(f"replay: {elapsed:.0f} s, {done}")

    started = time.monotonic()
    run_aiperf(argv, out_dir / "aiperf.log", tick, tick_every_s=10.0)
    after = _settled_scrape(metrics_url)
    profile = read_json_inside(
        out_dir / ARTIFACTS / PROFILE_JSON,
        out_dir,
        MAX_RUN_JSON_BYTES,
        UnreachableError,
        "aiperf",
        fix=f"see {out_dir / 'aiperf.log'}",
    )
    result = replace(
        measurement(spec, profile, before, after, config),
        requests_acceptance=requests_acceptance(spec, out_dir / ARTIFACTS),
    )
    write_atomically(
        str(out_dir / MEASUREMENT_JSON), json.dumps(result.to_json(), indent=2, allow_nan=False) + "\n", "--out"
    )
    say(
        f"replay: done in {time.monotonic() - started:.0f} s: {result.ok_count}/{result.request_count} ok, "
        f"{result.output_tokens_per_s:.1f} output tokens/s"
    )
    return result


def read_measurement(path: Path, out: Path) -> ReplayMeasurement:
    """A finished run's measurement under `out` (bench --report-only): a regular file inside `out`, of a
    bounded size, parsed strictly (nesting checked before parsing); a bad one is one line naming it."""
    data = read_json_inside(path, out, MAX_RUN_JSON_BYTES, ConfigError, "--out", fix="remove it or run bench again")
    try:
        return ReplayMeasurement.from_json(data)
    except ValueError as err:  # replay.checked: the key and its range (a number, never a file's text)
        raise ConfigError(
            "--out", f"{path} is not a bench measurement ({err})", "remove it or run bench again"
        ) from None
    except (KeyError, TypeError, AttributeError):
        raise ConfigError(
            "--out",
            f"{path} is not a bench measurement (a field is missing or of the wrong type)",
            "remove it or run bench again",
        ) from None
