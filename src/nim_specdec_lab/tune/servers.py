"""The shell of `nim-specdec tune`: servers, replays and files around the pure core.

One server at a time, each started through `nim-specdec serve` (nim_specdec_lab.server_process) with the user's
environment and arguments and stopped before the next one starts, also on Ctrl-C or an error. Every
measurement goes through the project's one replay engine (tools.replay, AIPerf).
"""

from __future__ import annotations

import json
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from nim_specdec.errors import ConfigError, UnreachableError
from nim_specdec.files.regular_file import open_regular_text
from nim_specdec.launch.resolve import plan_for, public
from nim_specdec.observe.smoke import http_get
from nim_specdec_lab.ngram.corpus import RecordedRequest
from nim_specdec_lab.ngram.http_replay import replay
from nim_specdec_lab.ngram.trace import CapturedRequest, parse_capture
from nim_specdec_lab.replay import ReplayMeasurement, ReplaySpec, run_replay
from nim_specdec_lab.server_process import ServerSpec, running_server
from nim_specdec_lab.tune.engines.measured import measured_engine
from nim_specdec_lab.tune.runs.measurement import (
    MeasureOptions,
    Round,
    Say,
    judged_tokens_per_s,
    run_count,
)


@dataclass
class ServerLog:
    """What each server start cost, for the report."""

    starts: list[dict[str, Any]] = field(default_factory=list)


# A capture is read whole into memory: larger than this is not a trace to tune on.
MAX_TRACE_BYTES = 4 * 1024**3


KEEP_ALIVE_VAR, KEEP_ALIVE_S = "VLLM_HTTP_TIMEOUT_KEEP_ALIVE", "120"


def with_long_keep_alive(env: Mapping[str, str]) -> dict[str, str]:
    """The environment of a server tune starts: the user's, with idle connections kept long enough to measure."""
    return {KEEP_ALIVE_VAR: KEEP_ALIVE_S, **env}


@contextmanager
def served(
    name: str,
    env: Mapping[str, str],
    args: Sequence[str],
    out: Path,
    settings: MeasureOptions,
    log: ServerLog,
    say: Say,
    who: str = "tune",
) -> Iterator[Any]:
    say(f"{who}: starting server '{name}' (server {len(log.starts) + 1}; log {out / 'logs' / (name + '.log')})")
    started = time.monotonic()
    spec = ServerSpec(
        env=with_long_keep_alive(env),
        args=tuple(args),
        ready_timeout_s=settings.ready_timeout_s,
        log_path=out / "logs" / f"{name}.log",
    )
    entry: dict[str, Any] = {"name": name}
    log.starts.append(entry)
    with running_server(spec) as server:
        entry["ready_s"] = round(time.monotonic() - started, 1)
        entry["port"] = server.port
        # What the server ran on, read now: vLLM has logged its engine configuration by the time it is ready.
        entry["engine"] = measured_engine(server.log_text(), env, args)
        say(f"{who}: server '{name}' ready in {entry['ready_s']:.0f} s on port {server.port}")
        try:
            yield server
        finally:
            say(f"{who}: stopping server '{name}'")
    entry["total_s"] = round(time.monotonic() - started, 1)


def served_model(url: str) -> tuple[str, int | None]:
    """The served model's name and its max_model_len, from /v1/models."""
    status, body = http_get(url + "/v1/models", timeout=30)
    try:
        first = json.loads(body)["data"][0]
        return str(first["id"]), first.get("max_model_len")
    except (ValueError, KeyError, IndexError, TypeError):
        detail = "no answer" if status == 0 else f"HTTP {status}"
        raise UnreachableError(url, f"/v1/models gave no model ({detail})", "see the server's log") from None


def measure(
    server: Any,
    name: str,
    model: str,
    tokenizer: str | None,
    bodies: Sequence[Mapping[str, Any]],
    out: Path,
    settings: MeasureOptions,
    say: Say,
    mean_output_tokens: float | None = None,
) -> dict[int, list[Round]]:
    """Closed-loop replays on the running server, greedy: `settings.repeat` rounds over the concurrencies,
    interleaved so that a slow minute of a shared machine falls on every concurrency alike (`keep` picks
    the run that stands for them). AIPerf reads the served model's own tokenizer from disk (it would
    otherwise download one). Each run is preceded by `2 x concurrency + 2` unmeasured requests: the first
    steps at a new batch shape (and, with speculation, a new number of tokens per request) are slow on a
    fresh server, and `concurrency` alone left the first measured run of a server up to 1.5x slow."""
    rounds: dict[int, list[Round]] = {c: [] for c in settings.concurrencies}
    for round_no in range(1, settings.repeat + 1):
        for concurrency in settings.concurrencies:
            where = out / "runs" / name / f"c{concurrency}" / (f"round{round_no}" if settings.repeat > 1 else "")
            result = _one_run(server, name, model, tokenizer, bodies, where, settings, concurrency, mean_output_tokens)
            accepted = (
                f", acceptance {result.spec.accepted / result.spec.draft_tokens:.2f}"
                if (result.spec and result.spec.draft_tokens)
                else ""
            )
            of = f" (round {round_no} of {settings.repeat})" if settings.repeat > 1 else ""
            say(
                f"tune: {name} at concurrency {concurrency}{of}: {judged_tokens_per_s(result):.1f} output tokens/s "
                f"(client: {result.output_tokens_per_s:.1f}){accepted}"
            )
            rounds[concurrency].append(Round(name, round_no, result))
    return rounds


def _one_run(
    server: Any,
    name: str,
    model: str,
    tokenizer: str | None,
    bodies: Sequence[Mapping[str, Any]],
    where: Path,
    settings: MeasureOptions,
    concurrency: int,
    mean_output_tokens: float | None,
) -> ReplayMeasurement:
    spec = ReplaySpec(
        url=server.url,
        model=model,
        requests=tuple(bodies),
        concurrency=concurrency,
        schedule="closed",
        request_count=run_count(settings, len(bodies), concurrency, mean_output_tokens),
        greedy=True,
        max_tokens=settings.max_tokens,
        ignore_eos=settings.ignore_eos,
        tokenizer=tokenizer,
        warmup=2 * concurrency + 2,
    )
    # run_aiperf drops the Hub's offline switches, with which AIPerf would not read a tokenizer directory.
    result = run_replay(spec, where, settings.aiperf_bin)
    if result.ok_count < result.request_count:
        raise UnreachableError(
            server.url,
            f"answered {result.request_count - result.ok_count} of "
            f"{result.request_count} requests with an error ({name}, concurrency {concurrency})",
            f"see {where / 'aiperf.log'} and the server's log",
        )
    return result


def record_token_ids(
    url: str,
    captured: Sequence[CapturedRequest],
    model: str,
    tail: int,
    concurrency: int,
    max_model_len: int | None,
    settings: MeasureOptions,
    say: Say,
) -> list[RecordedRequest]:
    """Greedy prompt and output ids of every captured request (with the measured runs' max_tokens and
    ignore_eos), for the exact simulators of the model-free methods."""

    forced = []
    for item in captured:
        payload = dict(item.payload)
        if settings.max_tokens is not None:
            payload.pop("max_completion_tokens", None)
            payload["max_tokens"] = settings.max_tokens
        if settings.ignore_eos:
            payload["ignore_eos"] = True
        forced.append(CapturedRequest(item.line, item.path, payload))
    say(f"tune: recording greedy token ids of {len(forced)} requests for the simulators")
    replayed = replay(url, forced, model, tail, concurrency, max_model_len)
    records = [r.request for r in replayed if r.request is not None]
    failed = [r for r in replayed if r.request is None]
    if not records:
        raise UnreachableError(
            url,
            f"answered none of the {len(forced)} captured requests ({failed[0].error if failed else 'no detail'})",
            "check the capture and the server's log",
        )
    if failed:
        say(f"tune: note: {len(failed)} of {len(forced)} requests failed and are left out of the simulation")
    return records


def local_model_dir(env: Mapping[str, str], args: Sequence[str]) -> str | None:
    """The target's local directory once a server has materialized it (its tokenizer is there)."""

    settings, plan = plan_for(env, list(args))
    target = public(plan, settings.host.secrets)["target"]
    local = target.get("local_dir") or target.get("model")
    return local if local and Path(local).is_dir() else None


def read_trace(path: Path) -> list[CapturedRequest]:

    try:
        with open_regular_text(path, MAX_TRACE_BYTES) as src:
            captured = parse_capture(src, "--trace")
    except OSError as err:
        raise ConfigError(
            "--trace", f"cannot read {path} ({err.strerror})", "point --trace at a capture file"
        ) from None
    except UnicodeDecodeError:
        raise ConfigError("--trace", f"{path} is not UTF-8 text", "point --trace at a JSONL capture") from None
    kinds = {c.path for c in captured}
    if len(kinds) > 1:
        raise ConfigError("--trace", "mixes chat and completion requests", "capture one endpoint, or split the capture")
    return captured
