"""How tune measures and what a measured run is: the options every server is measured with, a run and the server
it was taken on, how many requests a run sends, and the figure a run is judged by (pure)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from nim_specdec_lab.replay import ReplayMeasurement

Say = Callable[[str], None]


@dataclass(frozen=True)
class MeasureOptions:
    """How each measurement is made; the same for every server so that they compare."""

    concurrencies: tuple[int, ...]
    requests_per_run: int | None  # None: run_count's rule
    max_tokens: int | None
    ignore_eos: bool
    aiperf_bin: Path | None
    ready_timeout_s: float
    repeat: int = 1  # runs per concurrency on each server, interleaved; the server's median run stands for it
    rounds: int = 1  # servers per configuration, one per pass over tune's lineup (tune.runs.rounds)


@dataclass(frozen=True)
class Round:
    """One measured run, and where it was taken: the server (its name) and the run's repeat on that server."""

    server: str
    number: int
    run: ReplayMeasurement


def server_name(configuration: str, round_no: int) -> str:
    """A configuration's server of round 1 carries its name; those of the next rounds `-r2`, `-r3`, ... (logs,
    runs)."""
    return configuration if round_no == 1 else f"{configuration}-r{round_no}"


# A run shorter than this many output tokens lasts well under a second on a small model, and one late step
# or client read moves its figure by a quarter (measured: 384-token runs at concurrency 4 read 0.87x and
# 1.16x of their neighbours in one sweep).
MIN_RUN_TOKENS = 2048


def run_count(
    settings: MeasureOptions, trace_len: int, concurrency: int, mean_output_tokens: float | None = None
) -> int:
    """Requests per run: --requests-per-run, else every captured request, at least 8 per slot, and at
    least MIN_RUN_TOKENS output tokens (by the recorded completions' mean length)."""
    if settings.requests_per_run is not None:
        return settings.requests_per_run
    by_tokens = math.ceil(MIN_RUN_TOKENS / mean_output_tokens) if mean_output_tokens and mean_output_tokens > 0 else 0
    return max(trace_len, 8 * concurrency, by_tokens)


# AIPerf keeps its connections in a pool. At high concurrency on a small machine the client falls behind and
# a pooled connection can sit idle past uvicorn's keep-alive (vLLM's default, 5 s): the server closes it as
# the client writes, and requests fail with "Server disconnected" (measured: 9 of 128 at concurrency 16 on 2


def judged_tokens_per_s(result: ReplayMeasurement) -> float:
    """The figure tune fits and verifies on: what the server sustained at the run's concurrency (its own
    request latency, ReplayMeasurement.server_tokens_per_s), else the client's figure. On a small machine
    the client and the server share the CPU, and the client's late reads would be counted against
    whichever server happened to be running."""
    server = result.server_tokens_per_s
    return server if server is not None else result.output_tokens_per_s
