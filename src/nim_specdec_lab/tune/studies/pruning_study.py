"""Whether pruning changes tune's answer: the full sweep's and the pruned tune's recommendation in the same
simulated worlds (pure; numpy, tune.deciding.decide and tune.lineup.pruning).

A world is one machine (nim_specdec_lab.noise_worlds) measuring every configuration in every round, servers
started in the full sweep's rotated order. The full sweep decides on all of it. The pruned tune reads the
same servers' figures where it would have started them (common random numbers: the two rules are compared
on one draw of the noise, not on two): round 1 whole, a configuration below pruning.SCREEN of off there
dropped, then off and the contenders the budget has room for (pruning.confirmed), less those
pruning.to_drop drops after each round. Servers are counted as tune counts them: round 1's, a draft
model's K = 0 server (`zero_k`, in round 1 unless the screen dropped the draft), then every later round's.
Both decide with the same call tune makes. The share of worlds
where they agree comes with its 95% Wilson interval (noise_study.Share).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from nim_specdec_lab.noise_worlds import Machine, figures, simulate, true_log_speedups
from nim_specdec_lab.tune.deciding.decide import Option, decide
from nim_specdec_lab.tune.lineup import pruning
from nim_specdec_lab.tune.runs.rounds import order_of
from nim_specdec_lab.tune.studies.noise_study import MARGIN, Share

Figures = Mapping[int, Mapping[int, float]]


@dataclass(frozen=True)
class Compared:
    full: list[int | None]  # the full sweep's pick in each world (configuration index; None: off)
    pruned: list[int | None]
    servers: list[int]  # the servers the pruned tune started in each world
    full_servers: int  # every configuration in every round, and the K = 0 servers
    rounds_served: list[Mapping[str, int]]  # per world: rounds each configuration was served in, pruned

    def agreement(self) -> Share:
        return Share(sum(f == p for f, p in zip(self.full, self.pruned)), len(self.full))


@dataclass(frozen=True)
class Pruned:
    pick: str | None  # the option recommended; None for off
    started: int
    served: Mapping[str, int]  # rounds each option was served in


def _first_rounds(figs: Figures, rounds: int) -> dict[int, dict[int, float]]:
    return {c: {r: v for r, v in by_round.items() if r <= rounds} for c, by_round in figs.items()}


def pruned_pick(
    off: Figures,
    options: Sequence[Option],
    weights: Mapping[int, float],
    rounds: int,
    budget: int,
    margin: float = MARGIN,
    zero_k: Sequence[str] = (),
) -> Pruned:
    """What the pruned tune recommends on these figures, how many servers it started (every configuration in
    round 1 and the K = 0 server of each draft in `zero_k` the screen kept, then off and the contenders each
    later round has room for within `budget` servers), and in how many rounds each configuration was served."""
    first_off = _first_rounds(off, 1)
    contenders = [o.name for o in options if not pruning.screened_out(first_off, _first_rounds(o.figures, 1), weights)]
    proposal = next((o.name for o in options if o.proposal), None)
    figs = {o.name: o.figures for o in options}
    served = {o.name: 1 for o in options}
    off_rounds, started = 1, 1 + len(options) + sum(name in contenders for name in zero_k)
    for round_no in range(2, rounds + 1):
        so_far = {n: _first_rounds(figs[n], round_no - 1) for n in contenders}
        serving = pruning.confirmed(
            _first_rounds(off, round_no - 1), so_far, weights, proposal, budget - started, rounds - round_no + 1
        )
        if not serving:
            break
        off_rounds, started = round_no, started + 1 + len(serving)
        for name in serving:
            served[name] = round_no
        seen = {n: _first_rounds(figs[n], round_no) for n in serving}
        gone = pruning.to_drop(_first_rounds(off, round_no), seen, weights, proposal, margin)
        contenders = [n for n in serving if n not in gone]
    kept = [Option(o.name, o.config, _first_rounds(o.figures, served[o.name]), o.proposal, o.current) for o in options]
    chosen = decide(_first_rounds(off, off_rounds), kept, weights, margin).recommended
    return Pruned(None if chosen is None else chosen.name, started, served)


def compare(
    ratios: Mapping[int, Sequence[float]],
    concurrencies: Sequence[int],
    weights: Mapping[int, float],
    proposal: int | None = None,
    budget: int | None = None,
    rounds: int = 3,
    machine: Machine = Machine(),
    worlds: int = 1000,
    seed: int = 1,
    margin: float = MARGIN,
    zero_k: Sequence[int] = (),
) -> Compared:
    """`ratios[k]`: configuration k's true speedup over off at each concurrency; `proposal`: the index of the
    model's choice among them (None: the model chose off); `budget`: the pruned tune's servers (None: as many
    as the full sweep's); `zero_k`: the draft models among them, each with a K = 0 server in round 1."""
    lineup = list(range(1 + len(ratios)))
    orders = [order_of(lineup, r) for r in range(1, rounds + 1)]
    measured = simulate(machine, true_log_speedups(ratios, len(concurrencies)), orders, worlds, seed)
    full, pruned, servers, rounds_served = [], [], [], []
    for w in range(worlds):
        off = figures(measured, w, 0, concurrencies)
        options = [
            Option(str(k), {"k": k}, figures(measured, w, k, concurrencies), proposal=k == proposal) for k in ratios
        ]
        chosen = decide(off, options, weights, margin).recommended
        full.append(None if chosen is None else int(chosen.name))
        full_servers = len(lineup) * rounds + len(zero_k)
        found = pruned_pick(
            off, options, weights, rounds, budget or full_servers, margin, zero_k=[str(k) for k in zero_k]
        )
        pruned.append(None if found.pick is None else int(found.pick))
        servers.append(found.started)
        rounds_served.append(found.served)
    return Compared(full, pruned, servers, len(lineup) * rounds + len(zero_k), rounds_served)
