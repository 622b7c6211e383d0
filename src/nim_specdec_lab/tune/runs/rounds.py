"""tune's rounds: which servers it starts in what order, and every run they measured.

A round is one pass over the lineup: a fresh server for each configuration, so that a slow stretch of a
shared machine falls on the servers of one round alike and a configuration's n-th server pairs with off's
n-th. Round 1 runs the lineup in its own order (off, each candidate at its largest K, then the model's
choice, which is made from round 1's servers and joins the lineup at its end) and also holds what only feeds
the fit (a draft model's server at K = 0). The rounds run in cycles of as many rounds as configurations
(`order_of`): the first cycle rotates the lineup by 0, 1, ..., L - 1 places (round 1 by 0: off first, as its
server records what the simulators read), every later cycle by 1, ..., L - 1 and then 0 places. Each
complete cycle is a Latin square: every configuration holds every position once, so a first server that
pays for a cold machine, or a round that drifts, weighs on every configuration alike. In an incomplete
cycle off takes the last places and a candidate the first: over any number of rounds off starts no more
rounds than any candidate and each candidate at most one more than off, for every lineup size, two
included, so a first-server effect p (in log) moves a speedup by at most p / R over R rounds, against
speculation where it does (`position_bias`, printed for every size by bench/bench_order.py). Every
entry records its server's position in its round. A server measures each concurrency `--repeat` times; its
median run is that server's figure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence, TypeVar

from nim_specdec_lab.replay import ReplayMeasurement
from nim_specdec_lab.tune.runs.measurement import Round, judged_tokens_per_s
from nim_specdec_lab.tune.runs.repeats import median_run

T = TypeVar("T")


@dataclass(frozen=True)
class Entry:
    configuration: str
    round: int  # the configuration's n-th server, started in the n-th pass over the lineup
    server: str
    repeat: int  # the run's place among its server's runs at this concurrency
    concurrency: int
    run: ReplayMeasurement
    position: int  # the server's place among the servers started in its round, from 1


def rotation(size: int, round_no: int) -> int:
    """The places round `round_no` rotates a lineup of `size` by: 0, 1, ..., L - 1 in the first cycle of L
    rounds, then 1, ..., L - 1, 0 in every later one."""
    if size < 2 or round_no <= 1:
        return 0
    k = round_no - 1
    return k if k < size else (1 + (k - size) % size) % size


def order_of(lineup: Sequence[T], round_no: int) -> list[T]:
    """Round `round_no`'s order: the lineup rotated by `rotation` places (round 1 as given, off first)."""
    shift = rotation(len(lineup), round_no)
    return [*lineup[shift:], *lineup[:shift]]


def position_bias(size: int, rounds: int, effect: Sequence[float]) -> float:
    """The largest shift, in log, that a position effect moves a candidate's mean log ratio over off's by
    in `rounds` rounds of a lineup of `size` served in tune's order: `effect[p]` is the log effect on the
    server at place p (from 0; 0 beyond). Positive: for the candidate."""
    at = lambda p: effect[p] if p < len(effect) else 0.0  # noqa: E731
    orders = [order_of(list(range(size)), n) for n in range(1, rounds + 1)]
    shifts = [math.fsum(at(o.index(k)) - at(o.index(0)) for o in orders) / rounds for k in range(1, size)]
    return max(shifts, key=abs, default=0.0)


@dataclass
class Table:
    """Every measured run, in the order measured."""

    entries: list[Entry] = field(default_factory=list)

    def add(self, configuration: str, round_no: int, measured: Mapping[int, Sequence[Round]]) -> None:
        # A server measures every concurrency once per repeat, repeats outermost (servers.measure).
        position = 1 + len({e.server for e in self.entries if e.round == round_no})
        found = sorted(((r.number, c, r) for c, rounds in measured.items() for r in rounds), key=lambda x: x[:2])
        for repeat, c, one in found:
            self.entries.append(Entry(configuration, round_no, one.server, repeat, c, one.run, position))

    def order_by_round(self) -> dict[str, list[str]]:
        """Each round's configurations in the order their servers started."""
        out: dict[str, list[str]] = {}
        for e in sorted(self.entries, key=lambda e: (e.round, e.position)):
            names = out.setdefault(str(e.round), [])
            if e.configuration not in names:
                names.append(e.configuration)
        return out

    def has(self, configuration: str) -> bool:
        return any(e.configuration == configuration for e in self.entries)

    def _of(self, configuration: str, round_no: int | None = None) -> list[Entry]:
        return [e for e in self.entries if e.configuration == configuration and round_no in (None, e.round)]

    def server_runs(self, configuration: str, round_no: int) -> dict[int, ReplayMeasurement]:
        """The configuration's server of that round: its median run at each concurrency."""
        return _medians(self._of(configuration, round_no))

    def kept(self, configuration: str) -> dict[int, ReplayMeasurement]:
        """The run that stands for the configuration at each concurrency: the median of all its runs."""
        return _medians(self._of(configuration))

    def figures(self, configuration: str) -> dict[int, dict[int, float]]:
        """Concurrency -> round -> that round's server figure (judged tokens/s of its median run)."""
        out: dict[int, dict[int, float]] = {}
        for round_no in sorted({e.round for e in self._of(configuration)}):
            for c, run in self.server_runs(configuration, round_no).items():
                out.setdefault(c, {})[round_no] = judged_tokens_per_s(run)
        return out

    def rounds_of(self, configuration: str) -> int:
        return len({e.round for e in self._of(configuration)})

    def to_json(self) -> list[dict[str, Any]]:
        """tune.json's runs, in measuring order; `kept` marks the run that stands for its configuration."""
        kept = {name: self.kept(name) for name in {e.configuration for e in self.entries}}
        return [
            {
                "configuration": e.configuration,
                "round": e.round,
                "server": e.server,
                "repeat": e.repeat,
                "concurrency": e.concurrency,
                "position": e.position,
                "kept": e.run is kept[e.configuration][e.concurrency],
                "judged_tokens_per_s": round(judged_tokens_per_s(e.run), 3),
                # Whose figure that is: the server's own where its histograms answered, else the client's.
                "judged_of": "client" if e.run.server_tokens_per_s is None else "server",
                **e.run.to_json(),
            }
            for e in self.entries
        ]


def _medians(entries: Sequence[Entry]) -> dict[int, ReplayMeasurement]:
    by_c: dict[int, list[ReplayMeasurement]] = {}
    for e in entries:
        by_c.setdefault(e.concurrency, []).append(e.run)
    return {c: median_run(runs, judged_tokens_per_s) for c, runs in sorted(by_c.items())}
