"""Repeated measurements of one configuration: which run stands for them, and how far they spread.

On a shared machine two runs of the same server and load can differ by 1.4x or more (measured: the same
server at concurrency 1 read 92, 102 and 136 output tokens/s in three runs a minute apart), and two
servers of one configuration differ as much again. tune keeps a whole run (so that its counters, drafts and
accepted tokens, stay with the figure they produced): the median of a server's `--repeat` runs stands for
that server in its round, and the median of all of a configuration's runs for the configuration in the
tables and the fit.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence, TypeVar

Run = TypeVar("Run")


def median_run(runs: Sequence[Run], figure: Callable[[Run], float]) -> Run:
    """The run whose figure is the median; of an even number, the lower of the middle two (the
    conservative reading, so a noisy round never makes a configuration look faster)."""
    if not runs:
        raise ValueError("no runs")
    ordered = sorted(runs, key=figure)
    return ordered[(len(ordered) - 1) // 2]


def spread(runs: Sequence[Run], figure: Callable[[Run], float]) -> float | None:
    """Largest over smallest figure among the runs; None for a single run or a zero figure."""
    values = [figure(r) for r in runs]
    if len(values) < 2 or min(values) <= 0:
        return None
    return max(values) / min(values)


def spreads_by_configuration(
    runs: Sequence[Mapping[str, object]], figure_key: str = "judged_tokens_per_s"
) -> dict[str, dict[int, float]]:
    """From tune.json's runs (one entry per run): configuration -> concurrency -> max/min over its runs."""
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
