"""Prometheus counters of payload capture, exposed on the vLLM server's own /metrics.

vLLM 0.32 serves /metrics from `vllm.v1.metrics.prometheus.get_prometheus_registry()`: the default
registry with one API server process, or, when PROMETHEUS_MULTIPROC_DIR is set (vLLM sets it itself
for `--api-server-count` > 1, before it spawns the API server processes), a fresh registry holding a
`MultiProcessCollector` that sums the per-process files of that directory. A plain
`prometheus_client.Counter` registered in the default registry covers both: in multiprocess mode
prometheus_client picks its file-backed value class at import, so every API server process writes
its counts to the shared directory and /metrics reports the sum over processes.

    nim_capture_records_written_total             lines appended to the capture file
    nim_capture_records_dropped_total{reason}     queue_full | not_json | too_deep | encode_error |
                                                  write_error | writer_stopped
    nim_capture_bytes_written_total               bytes appended to the capture file
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from functools import lru_cache

from prometheus_client import REGISTRY, CollectorRegistry, Counter

DROP_REASONS = ("queue_full", "not_json", "too_deep", "encode_error", "write_error", "writer_stopped")


@dataclass
class CaptureStats:
    """Plain totals of one writer, for benchmarks and logs (the counters are process-wide)."""

    written: int = 0
    bytes: int = 0
    dropped: dict[str, int] = field(default_factory=lambda: dict.fromkeys(DROP_REASONS, 0))


class CaptureCounters:
    """Counts into both the Prometheus counters and a writer's own CaptureStats."""

    def __init__(self, written: Counter, dropped: Counter, nbytes: Counter) -> None:
        self._written = written
        self._dropped = dropped
        self._bytes = nbytes
        self._lock = threading.Lock()
        self.stats = CaptureStats()

    def add_written(self, records: int, nbytes: int) -> None:
        self._written.inc(records)
        self._bytes.inc(nbytes)
        with self._lock:
            self.stats.written += records
            self.stats.bytes += nbytes

    def add_dropped(self, reason: str, records: int = 1) -> None:
        self._dropped.labels(reason=reason).inc(records)
        with self._lock:
            self.stats.dropped[reason] += records


@lru_cache(maxsize=None)
def _collectors(registry: CollectorRegistry) -> tuple[Counter, Counter, Counter]:
    # A Prometheus registry refuses a second metric of the same name, and the middleware can be
    # built more than once in a process (tests, app rebuilds): create the collectors once per registry.
    written = Counter(
        "nim_capture_records_written", "Captured requests appended to the capture file", registry=registry
    )
    dropped = Counter(
        "nim_capture_records_dropped", "Captured requests not written, by reason", ["reason"], registry=registry
    )
    nbytes = Counter("nim_capture_bytes_written", "Bytes appended to the capture file", registry=registry)
    for reason in DROP_REASONS:
        dropped.labels(reason=reason)  # export zeros so that dashboards see the series from the start
    return written, dropped, nbytes


def capture_counters(registry: CollectorRegistry | None = None) -> CaptureCounters:
    """Counters for one writer; `registry` defaults to prometheus_client's default registry."""
    return CaptureCounters(*_collectors(REGISTRY if registry is None else registry))
