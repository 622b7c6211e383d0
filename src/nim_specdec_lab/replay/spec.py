"""What a replay is (ReplaySpec), what it measured (ReplayMeasurement), and the pure steps in between:
checking a spec, the request bodies sent on the wire, the AIPerf trace file and command line.

The bodies go to AIPerf verbatim (mooncake_trace `payload` lines), so everything the measurement depends
on is set here: the served model name, streaming with usage in the last chunk (time to first token and
inter-token latency exist only for streamed responses; the usage block is the server's own token count),
and, when asked, greedy sampling, a fixed max_tokens and ignore_eos.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from nim_specdec.engines.vllm.observe.spec_counters import SpecCounters
from nim_specdec.errors import ConfigError
from nim_specdec_lab.replay import checked
from nim_specdec_lab.replay.request_acceptance import RequestAcceptance, session_id

SCHEDULES = ("closed", "timestamps")
CHAT, COMPLETIONS = "chat", "completions"
# Keys a capture may carry that would change what is measured; the replay owns them.
_OWNED = ("model", "stream", "stream_options")


@dataclass(frozen=True)
class ReplaySpec:
    url: str
    model: str
    requests: tuple[Mapping[str, Any], ...]
    concurrency: int = 1
    schedule: str = "closed"
    timestamps_ms: tuple[int, ...] | None = None
    request_count: int | None = None
    greedy: bool = False
    max_tokens: int | None = None
    ignore_eos: bool = False
    tokenizer: str | None = None
    metrics_path: str = "/metrics"
    warmup: int = 1  # requests sent (not measured) before the run: a fresh server's first answers are slow
    aiperf_extra: tuple[str, ...] = ()  # more `aiperf profile` arguments, last on its command line
    # Each request's category (SPEED-Bench's, or the capture's name): what its response's acceptance counts for.
    labels: tuple[str, ...] | None = None


@dataclass(frozen=True)
class ReplayMeasurement:
    request_count: int
    ok_count: int
    concurrency: int
    schedule: str
    duration_s: float
    output_tokens: int
    output_tokens_per_s: float
    latency_s: Mapping[str, float]
    ttft_s: Mapping[str, float]
    itl_s: Mapping[str, float]
    spec: SpecCounters | None
    server_spec_config: Mapping[str, Any] | None
    # The server's own means over the run (observe.server_timings): ttft_mean_s, tpot_mean_s, latency_mean_s.
    server_means: Mapping[str, float] = field(default_factory=dict)
    client_busy_share: float | None = None  # see observe.server_timings.client_busy_share
    # What the requests were sent with (greedy, max_tokens, ignore_eos): two runs compare only when equal.
    sampling: Mapping[str, Any] = field(default_factory=dict)
    # Each response's own acceptance, where the server reported it (--per-request-spec-decode-metrics); None
    # where no response carried it.
    requests_acceptance: tuple[RequestAcceptance, ...] | None = None

    @property
    def server_tokens_per_s(self) -> float | None:
        """Output tokens/s the server sustained with `concurrency` requests in flight: concurrency x output
        tokens per request / the server's own mean request latency. A closed loop whose client is never
        late delivers exactly this; on a small machine the client's own gaps between requests (which the
        client-side figure counts as server time) are left out, and so is the time before the engine
        receives a request (HTTP, chat template, tokenization): where the API server cannot keep up, this
        reads above what clients get. None without the server's latency."""
        latency = self.server_means.get("latency_mean_s")
        if not latency or latency <= 0 or self.ok_count < 1 or self.schedule != "closed":
            return None
        return self.concurrency * (self.output_tokens / self.ok_count) / latency

    def to_json(self) -> dict[str, Any]:
        spec = None
        if self.spec is not None:
            spec = {
                "drafts": self.spec.drafts,
                "draft_tokens": self.spec.draft_tokens,
                "accepted": self.spec.accepted,
                "per_position": list(self.spec.per_position),
            }
        return {
            "request_count": self.request_count,
            "ok_count": self.ok_count,
            "concurrency": self.concurrency,
            "schedule": self.schedule,
            "duration_s": self.duration_s,
            "output_tokens": self.output_tokens,
            "output_tokens_per_s": self.output_tokens_per_s,
            "latency_s": dict(self.latency_s),
            "ttft_s": dict(self.ttft_s),
            "itl_s": dict(self.itl_s),
            "spec": spec,
            "server_spec_config": None if self.server_spec_config is None else dict(self.server_spec_config),
            "server_means": dict(self.server_means),
            "client_busy_share": self.client_busy_share,
            "server_tokens_per_s": self.server_tokens_per_s,
            "sampling": dict(self.sampling),
            "requests_acceptance": None
            if self.requests_acceptance is None
            else [r.to_json() for r in self.requests_acceptance],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "ReplayMeasurement":
        """Every number checked finite and in its range (replay.checked): ValueError names the one that is not."""
        spec = data.get("spec")
        counters = None
        if isinstance(spec, Mapping):
            counters = SpecCounters(
                drafts=checked.number(spec.get("drafts", 0), "spec.drafts", checked.MAX_COUNT),
                draft_tokens=checked.number(spec.get("draft_tokens", 0), "spec.draft_tokens", checked.MAX_COUNT),
                accepted=checked.number(spec.get("accepted", 0), "spec.accepted", checked.MAX_COUNT),
                per_position=tuple(
                    checked.number(v, "spec.per_position", checked.MAX_COUNT) for v in spec.get("per_position", ())
                ),
            )
        return cls(
            request_count=checked.count(data["request_count"], "request_count"),
            ok_count=checked.count(data["ok_count"], "ok_count"),
            concurrency=checked.count(data["concurrency"], "concurrency", checked.MAX_CONCURRENCY, 1),
            schedule=str(data["schedule"]),
            duration_s=checked.number(data["duration_s"], "duration_s", checked.MAX_SECONDS),
            output_tokens=checked.count(data["output_tokens"], "output_tokens"),
            output_tokens_per_s=checked.number(
                data["output_tokens_per_s"], "output_tokens_per_s", checked.MAX_TOKENS_PER_S
            ),
            latency_s=checked.figures(data.get("latency_s"), "latency_s", checked.MAX_SECONDS),
            ttft_s=checked.figures(data.get("ttft_s"), "ttft_s", checked.MAX_SECONDS),
            itl_s=checked.figures(data.get("itl_s"), "itl_s", checked.MAX_SECONDS),
            spec=counters,
            server_spec_config=data.get("server_spec_config"),
            server_means=checked.figures(
                data.get("server_means") if isinstance(data.get("server_means"), Mapping) else None,
                "server_means",
                checked.MAX_SECONDS,
            ),
            client_busy_share=_share(data.get("client_busy_share")),
            sampling=dict(data["sampling"]) if isinstance(data.get("sampling"), Mapping) else {},
            requests_acceptance=None
            if data.get("requests_acceptance") is None
            else tuple(RequestAcceptance.from_json(r) for r in data["requests_acceptance"]),
        )


def _share(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def endpoint_type(requests: Sequence[Mapping[str, Any]]) -> str:
    """'chat' when every body has messages, 'completions' when every body has a prompt."""
    kinds = {CHAT if "messages" in r else COMPLETIONS if "prompt" in r else None for r in requests}
    if kinds == {CHAT} or kinds == {COMPLETIONS}:
        return kinds.pop()
    if None in kinds:
        raise ConfigError(
            "replay", "a request body has neither messages nor prompt", "replay chat or completion requests"
        )
    raise ConfigError("replay", "mixes chat and completion requests", "replay one endpoint at a time")


def check(spec: ReplaySpec) -> str:
    """Refuse a spec that cannot run; returns the endpoint type."""
    if not spec.url.startswith(("http://", "https://")):
        raise ConfigError("--url", f"{spec.url!r} is not an http(s) URL", "e.g. http://127.0.0.1:8000")
    if not spec.model:
        raise ConfigError("--model", "no served model name", "pass the name the server serves")
    if not spec.requests:
        raise ConfigError("replay", "no requests to send", "capture some traffic first")
    if spec.concurrency < 1:
        raise ConfigError("--concurrency", f"{spec.concurrency} is below 1", "use 1 or more requests in flight")
    if spec.schedule not in SCHEDULES:
        raise ConfigError("--schedule", f"{spec.schedule!r} is not a schedule", f"use one of {', '.join(SCHEDULES)}")
    if spec.schedule == "timestamps":
        if spec.timestamps_ms is None or len(spec.timestamps_ms) != len(spec.requests):
            raise ConfigError(
                "--schedule",
                "timestamps needs one timestamp per request",
                "replay a capture with timestamps or use --schedule closed",
            )
        if spec.request_count is not None and spec.request_count != len(spec.requests):
            raise ConfigError(
                "--request-count",
                "only a closed loop cycles the requests",
                "drop --request-count with --schedule timestamps",
            )
    if spec.request_count is not None and spec.request_count < 1:
        raise ConfigError("--request-count", f"{spec.request_count} is below 1", "send 1 or more requests")
    if spec.warmup < 0:
        raise ConfigError("--warmup", f"{spec.warmup} is below 0", "use 0 or more requests")
    if spec.labels is not None and len(spec.labels) != len(spec.requests):
        raise ConfigError(
            "replay", f"{len(spec.labels)} labels for {len(spec.requests)} requests", "one label a request"
        )
    if spec.max_tokens is not None and spec.max_tokens < 1:
        raise ConfigError("--max-tokens", f"{spec.max_tokens} is below 1", "use 1 or more tokens")
    return endpoint_type(spec.requests)


def wire_body(body: Mapping[str, Any], spec: ReplaySpec) -> dict[str, Any]:
    """The body as sent: the capture's own fields, with the ones the measurement depends on forced."""
    out = {k: v for k, v in body.items() if k not in _OWNED}
    out.update(model=spec.model, stream=True, stream_options={"include_usage": True})
    if spec.greedy:
        out["temperature"] = 0
    if spec.max_tokens is not None:
        # vLLM prefers max_completion_tokens over max_tokens: leave only the one we set.
        out.pop("max_completion_tokens", None)
        out["max_tokens"] = spec.max_tokens
    if spec.ignore_eos:
        out["ignore_eos"] = True
    return out


def trace_text(spec: ReplaySpec) -> str:
    """AIPerf mooncake_trace lines, each in a session of its own named after its request; timestamps (relative
    to the first) only for the timestamps schedule."""
    lines = []
    first = min(spec.timestamps_ms) if spec.schedule == "timestamps" and spec.timestamps_ms else 0
    for i, body in enumerate(spec.requests):
        # The session names the request: AIPerf keeps it with the record of its response (request_acceptance).
        line: dict[str, Any] = {"session_id": session_id(i), "payload": wire_body(body, spec)}
        if spec.schedule == "timestamps" and spec.timestamps_ms is not None:
            line = {"timestamp": int(spec.timestamps_ms[i]) - first, **line}
        lines.append(json.dumps(line, separators=(",", ":")))
    return "\n".join(lines) + "\n"


def warmup_bodies(spec: ReplaySpec) -> list[dict[str, Any]]:
    """The warm-up requests: the first bodies, answered whole (no stream) and short."""
    bodies = []
    for i in range(spec.warmup):
        body = wire_body(spec.requests[i % len(spec.requests)], spec)
        body.update(stream=False, max_tokens=min(int(body.get("max_tokens") or 16), 16))
        body.pop("stream_options", None)
        body.pop("max_completion_tokens", None)
        bodies.append(body)
    return bodies


def sampling(spec: ReplaySpec) -> dict[str, Any]:
    """The sampling a run forced on every request (None: each request's own)."""
    return {"greedy": spec.greedy, "max_tokens": spec.max_tokens, "ignore_eos": spec.ignore_eos}


def sent_count(spec: ReplaySpec) -> int:
    return spec.request_count if spec.schedule == "closed" and spec.request_count else len(spec.requests)


def aiperf_argv(spec: ReplaySpec, aiperf: str, endpoint: str, trace_file: str, artifact_dir: str) -> list[str]:
    base = spec.url.rstrip("/")
    argv = [
        aiperf,
        "profile",
        "--model",
        spec.model,
        "--url",
        base,
        "--endpoint-type",
        endpoint,
        "--streaming",
        "--custom-dataset-type",
        "mooncake_trace",
        "--input-file",
        trace_file,
        "--use-server-token-count",
        "--tokenizer",
        spec.tokenizer or "builtin",
        "--server-metrics",
        base + spec.metrics_path,
        "--output-artifact-dir",
        artifact_dir,
        "--ui-type",
        "none",
    ]
    if spec.schedule == "timestamps":
        argv += ["--fixed-schedule", "--fixed-schedule-auto-offset"]
    else:
        argv += [
            "--no-fixed-schedule",
            "--concurrency",
            str(spec.concurrency),
            "--request-count",
            str(sent_count(spec)),
            "--dataset-sampling-strategy",
            "sequential",
        ]
    return argv + list(spec.aiperf_extra)
