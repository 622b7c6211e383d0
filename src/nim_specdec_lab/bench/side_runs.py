"""bench without --serve: one side of the comparison (`--mode off` or `on`), measured against a server started
elsewhere: every workload replayed through AIPerf into OUT/runs/MODE/CATEGORY (report_files compares the sides)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from nim_specdec.errors import ConfigError
from nim_specdec_lab.bench.serve_rounds import served_tokenizer
from nim_specdec_lab.ngram.http_replay import server_model
from nim_specdec_lab.replay import ReplaySpec, run_replay
from nim_specdec_lab.replay.measure import warmup_for
from nim_specdec_lab.server_key import aiperf_cannot_carry


@dataclass(frozen=True)
class SideRuns:
    """One side's runs as the command's edge read and checked them: the server, the model and tokenizer to name
    (None: the server's own), and how each workload is replayed."""

    mode: str
    url: str
    model: str | None
    tokenizer: str | None
    concurrency: int
    schedule: str
    request_count: int | None
    greedy: bool
    max_tokens: int | None
    ignore_eos: bool
    metrics_path: str
    warmup: int | None  # None: replay.measure.warmup_for's rule
    extra: tuple[str, ...]  # more `aiperf profile` arguments
    aiperf: Path


def measure_side(side: SideRuns, workloads: Sequence[Any], out: Path, say: Callable[[str], None]) -> None:
    """Every workload replayed against the side's server; the model and tokenizer asked of it where not given."""
    try:  # asked without a key, before AIPerf runs, even with --model: a 401 is the only ConfigError here
        served = server_model(side.url)[0]
    except ConfigError:
        raise aiperf_cannot_carry(side.url) from None
    model = side.model or served
    tokenizer = side.tokenizer or served_tokenizer(side.url)
    for number, workload in enumerate(workloads, start=1):
        say(
            f"[{number}/{len(workloads)}] {workload.category}, speculation {side.mode}: "
            f"{len(workload.requests)} requests" + (f" ({workload.note})" if workload.note else "")
        )
        spec = ReplaySpec(
            url=side.url,
            model=model,
            requests=workload.requests,
            concurrency=side.concurrency,
            schedule=side.schedule,
            timestamps_ms=workload.timestamps_ms,
            request_count=side.request_count,
            greedy=side.greedy,
            max_tokens=side.max_tokens,
            ignore_eos=side.ignore_eos,
            tokenizer=tokenizer,
            metrics_path=side.metrics_path,
            warmup=warmup_for(side.concurrency, side.warmup),
            aiperf_extra=tuple(side.extra),
            labels=workload.request_labels(),
        )
        run_replay(spec, out / "runs" / side.mode / workload.category, side.aiperf, say)
