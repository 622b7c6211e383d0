"""tune's rounds: which servers it starts in what order, and every run they measured.

A round is one pass over the lineup: a fresh server for each configuration, so that a slow stretch of a
shared machine falls on the servers of one round alike and a configuration's n-th server pairs with off's
n-th. Round 1 runs the lineup in its own order (off, each candidate at its largest K, then the model's
choice, which is made from round 1's servers and joins the lineup at its end) and also holds what only feeds
the fit (a draft model's server at K = 0). Round 1 is the rotation by 0 places, and round n the lineup
rotated by n - 1 places (`order_of`), so that over as many rounds as configurations each holds every
position once: a first server that pays for a cold machine, or a round that drifts, weighs on every
configuration alike. Off must start round 1 (its server records what the simulators read), so a rotation
that would put off first again is never used: rounds past the lineup's length cycle through the rotations
1 to L - 1 only, and where the rounds cannot share the first place evenly (two configurations, three
rounds), the extra first place falls on a candidate, never on off: a cold first server then weighs against
speculation, not for it. Every entry records its
server's position in its round. A server measures each concurrency `--repeat` times; its median run is that
server's figure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from nim_specdec_lab.replay import ReplayMeasurement
from nim_specdec_lab.tune.repeats import median_run
from nim_specdec_lab.tune.runner import Round, judged_tokens_per_s


@dataclass(frozen=True)
class Entry:
    configuration: str
    round: int  # the configuration's n-th server, started in the n-th pass over the lineup
    server: str
    repeat: int  # the run's place among its server's runs at this concurrency
    concurrency: int
    run: ReplayMeasurement
    position: int  # the server's place among the servers started in its round, from 1


def order_of(lineup: Sequence[str], round_no: int) -> list[str]:
    """Round `round_no`'s order: round 1 as given (rotation 0, off first); round n the lineup rotated by
    n - 1 places while that is short of its length, then by 1 to L - 1 places in turn (never 0 again)."""
    size = len(lineup)
    if round_no <= 1 or size < 2:
        return list(lineup)
    shift = round_no - 1 if round_no <= size else 1 + (round_no - 2) % (size - 1)
    return [*lineup[shift:], *lineup[:shift]]


@dataclass
class Table:
    """Every measured run, in the order measured."""

    entries: list[Entry] = field(default_factory=list)

    def add(self, configuration: str, round_no: int, measured: Mapping[int, Sequence[Round]]) -> None:
        # A server measures every concurrency once per repeat, repeats outermost (runner.measure).
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
