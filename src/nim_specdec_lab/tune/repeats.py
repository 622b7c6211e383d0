"""Repeated measurements of one configuration: which round stands for them, and how far they spread.

On a shared machine two runs of the same server and load can differ by 1.4x or more (measured: the same
server at concurrency 1 read 92, 102 and 136 output tokens/s in three rounds a minute apart), and two
servers of one configuration differ as much again. tune therefore measures every concurrency `--repeat`
times on each server, the rounds interleaved, can start each configuration on `--servers` servers, the
passes alternated, and keeps the median of all those rounds: a whole run, so that its counters (drafts,
accepted tokens) stay with the figure they produced.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence, TypeVar

Run = TypeVar("Run")
Item = TypeVar("Item")


def later_passes(first_pass: Sequence[Item], servers: int) -> list[tuple[int, Item]]:
    """The servers started after pass 1, as (server number, configuration): pass 1's order again for each
    further server, so that configurations alternate (off, draft, off, draft) instead of running twice in
    a row."""
    return [(server_no, item) for server_no in range(2, servers + 1) for item in first_pass]


def median_run(runs: Sequence[Run], figure: Callable[[Run], float]) -> Run:
    """The run whose figure is the median; of an even number, the lower of the middle two (the
    conservative reading, so a noisy round never makes a configuration look faster)."""
    if not runs:
        raise ValueError("no runs")
    ordered = sorted(runs, key=figure)
    return ordered[(len(ordered) - 1) // 2]


def kept_by_concurrency(rounds: Mapping[int, Sequence[Run]], figure: Callable[[Run], float]) -> dict[int, Run]:
    """Per concurrency, the median of every round measured there, on every server of the configuration."""
    return {c: median_run(runs, figure) for c, runs in rounds.items()}


def spread(runs: Sequence[Run], figure: Callable[[Run], float]) -> float | None:
    """Largest over smallest figure among the rounds; None for a single round or a zero figure."""
    values = [figure(r) for r in runs]
    if len(values) < 2 or min(values) <= 0:
        return None
    return max(values) / min(values)


def spreads_by_configuration(
    runs: Sequence[Mapping[str, object]], figure_key: str = "judged_tokens_per_s"
) -> dict[str, dict[int, float]]:
    """From tune.json's runs (one entry per round): configuration -> concurrency -> max/min over its rounds."""
    grouped: dict[tuple[str, int], list[float]] = {}
    for run in runs:
        value = run.get(figure_key)
        if isinstance(value, (int, float)):
            grouped.setdefault((str(run["configuration"]), int(run["concurrency"])), []).append(float(value))
    out: dict[str, dict[int, float]] = {}
    for (name, c), values in grouped.items():
        found = spread(values, float)
        if found is not None:
            out.setdefault(name, {})[c] = found
    return out
