"""What tune leaves unserved, and what it serves again: the rules that keep a tune at the cost of one sweep
(pure: curves and figures in, names out).

A sweep, here, is what measuring each K once costs (as vLLM's own `generate_config` does, without an
interval): one server for speculation off and one per candidate per K from 1 to its largest. tune aims at
no more than that plus one, with intervals, by serving less where the outcome is already known:

1. Before any candidate is served, a model-free method whose simulated acceptance on the trace cannot beat
   off by the margin is left out. Its bound is its best tokens per step at any K (the simulators'
   `tokens_per_slot`): the speedup it would reach if drafting and verifying cost nothing beyond off's own
   step at the same batch size, the floor of the cost curve off measured. Below 1 + margin no cost model can
   make it pay, so serving it would only spend a server.
2. After its first server, a candidate measured below SCREEN of off on the traffic is dropped at once (no
   K = 0 server, no later round, no place in the cost model's choice). SCREEN is set from the machine model
   the lab's noise studies use (nim_specdec_lab.noise_worlds.Machine: a server's start moves its figure by
   10% sd in log, so one round's ratio of two servers by 14%). How often it drops a candidate it should
   not depends on the tails of that noise, and is stated for each noise world it is tested on
   (bench/bench_pruning.py, docs/tuning.md): on the normal machine a candidate truly equal to off in
   about 1 round of 12,500, with t(3) tails 1 in 380, on the harsh machine (t(3), loaded rounds, drift)
   1 in 55.
3. Rounds 2 to N serve off and the contenders: every candidate not dropped. After each round from the
   second on, a contender is dropped where its interval on the traffic lies wholly below off's (measured
   slower than off), or, against the leader (the model's choice while it contends, else the contender
   fastest on the traffic so far), its paired interval lies wholly below 1 - margin (slower than the leader
   by more than the margin a gain must clear). The leader is confirmed, not re-swept: no other K is served.
   A dropped candidate keeps the rounds it was served in and stays in Holm's family (tune.deciding.decide): the
   family is every candidate served in round 1.
4. The servers of a tune stay within a budget (`--max-servers`) that counts every server it starts: round 1's
   (off, every candidate, a draft model's K = 0 server, the model's choice where it is a configuration of
   its own) and every later round's. By default it is one sweep plus one, or where that leaves no room for
   off and every candidate in every round (`servers_needed`: the full sweep's servers, the rounds every
   interval needs), that many: a pick among candidates some of which went without their rounds is not
   the full sweep's pick (at `--max-k` 1 round 1 alone spent one sweep plus one). Each later round serves
   off and as many contenders as the servers left allow over the rounds left (the leader first, then the
   fastest so far); a contender a round has no room for keeps the rounds it has (no interval after one:
   never recommended), and where off and the leader no longer fit, no further round is served. A
   `--max-servers` below `servers_needed` is said before any server starts, with the value that would do.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

from nim_specdec_lab import stats
from nim_specdec_lab.tune.model.acceptance import AcceptanceCurve

Figures = Mapping[int, Mapping[int, float]]  # concurrency -> round -> tokens/s of that round's server
SCREEN = 0.6  # a first server below this share of off's figure on the traffic is dropped


def free_bound(curve: AcceptanceCurve) -> float:
    """The most a method could gain over off: its best tokens per step at any K > 0 (1.0 without one)."""
    return max((p.tokens_per_slot for p in curve.points if p.k > 0), default=1.0)


def unservable(curves: Mapping[str, AcceptanceCurve], margin: float) -> dict[str, float]:
    """The model-free methods whose free bound stays below 1 + margin, with that bound."""
    return {m: free_bound(c) for m, c in curves.items() if free_bound(c) < 1.0 + margin}


def first_round_ratio(off: Figures, candidate: Figures, weights: Mapping[int, float]) -> float | None:
    """The candidate's round-1 figure over off's on the traffic (weighted log ratio); None where round 1 lacks
    a weighted concurrency on either side."""
    first_off = {c: {1: r[1]} for c, r in off.items() if 1 in r}
    first = {c: {1: r[1]} for c, r in candidate.items() if 1 in r}
    found = stats.weighted_by_round(first_off, first, weights)
    return None if found is None else found.speedup


def screened_out(off: Figures, candidate: Figures, weights: Mapping[int, float], screen: float = SCREEN) -> bool:
    ratio = first_round_ratio(off, candidate, weights)
    return ratio is not None and ratio < screen


def leader(
    off: Figures,
    contenders: Mapping[str, Figures],
    weights: Mapping[int, float],
    proposal: str | None,
) -> str | None:
    """The model's choice while it contends, else the contender fastest on the traffic over the rounds so far
    (ties by name, so the pick is the same on every run); None without contenders."""
    if proposal is not None and proposal in contenders:
        return proposal
    scored = []
    for name, figures in contenders.items():
        found = stats.weighted_by_round(off, figures, weights)
        if found is not None and math.isfinite(found.speedup):
            scored.append((found.speedup, name))
    if not scored:
        return None
    best = max(r for r, _ in scored)
    return min(name for r, name in scored if r == best)


def to_drop(
    off: Figures,
    contenders: Mapping[str, Figures],
    weights: Mapping[int, float],
    proposal: str | None,
    margin: float,
) -> dict[str, str]:
    """The contenders to drop after a round (rule 3), each with why; none before two rounds give intervals."""
    lead = leader(off, contenders, weights, proposal)
    out: dict[str, str] = {}
    for name, figures in sorted(contenders.items()):
        vs_off = stats.weighted_by_round(off, figures, weights)
        if stats.wholly_below(vs_off):
            out[name] = f"measured slower than off on this traffic ({_interval(vs_off)})"
        elif lead is not None and name != lead:
            vs_lead = stats.weighted_by_round(contenders[lead], figures, weights)
            if stats.wholly_below(vs_lead, 1.0 - margin):
                out[name] = f"slower than {lead} by more than {margin:.0%} on this traffic ({_interval(vs_lead)})"
    return out


def _interval(s: stats.Speedup | None) -> str:
    assert s is not None and s.interval is not None
    return f"{s.speedup:.3f}x [{s.interval[0]:.3f}, {s.interval[1]:.3f}] over {s.rounds} rounds"


def confirmed(
    off: Figures,
    contenders: Mapping[str, Figures],
    weights: Mapping[int, float],
    proposal: str | None,
    budget_left: int,
    rounds_left: int,
) -> list[str]:
    """The contenders the next round serves beside off (rule 4): as many as the servers left allow over the
    rounds left, the leader first, then the fastest on the traffic so far; none where off and one no longer fit."""
    if budget_left < 2 or not contenders:
        return []
    room = max(1, budget_left // max(1, rounds_left) - 1)
    lead = leader(off, contenders, weights, proposal)

    def rank(name: str) -> tuple[bool, float, str]:
        found = stats.weighted_by_round(off, contenders[name], weights)
        return (name != lead, -(found.speedup if found is not None else 0.0), name)

    return sorted(contenders, key=rank)[:room]


def sweep_servers(kmax_by_candidate: Sequence[int]) -> int:
    """One sweep: off and every candidate at every K from 1 to its largest, one server each."""
    return 1 + sum(kmax_by_candidate)


def servers_needed(candidates: int, zero_k: int, rounds: int, choice: bool = True) -> int:
    """The most servers a tune of `candidates` starts where every round serves off and every candidate (and the
    model's choice, where it is a configuration of its own: `choice`): round 1's with `zero_k` draft models'
    K = 0 servers, then the same lineup in every later round. What the full sweep starts."""
    lineup = 1 + candidates + (1 if choice else 0)
    return lineup * max(1, rounds) + zero_k


def leader_needs(candidates: int, zero_k: int, rounds: int) -> int:
    """The fewest servers that give the leader an interval: round 1 whole, then off and the leader each round."""
    return 1 + candidates + 1 + zero_k + 2 * (max(1, rounds) - 1)


def default_budget(sweep: int, candidates: int, zero_k: int, rounds: int) -> int:
    """One sweep plus one, or the servers every candidate's rounds need where that is more."""
    return max(sweep + 1, servers_needed(candidates, zero_k, rounds))


def budget_line(budget: int, candidates: int, zero_k: int, rounds: int) -> str | None:
    """What a `--max-servers` below what the rounds need costs, and the value that would do; None where it is
    enough."""
    needed = servers_needed(candidates, zero_k, rounds)
    if budget >= needed:
        return None
    lineup = 1 + candidates + 1
    what = (
        "may leave no room for a second round (no interval: the safer choice kept)"
        if budget < leader_needs(candidates, zero_k, rounds)
        else "may leave room for the leader's rounds only (a candidate left out has no interval and is never "
        "recommended, where serving every round might recommend it)"
    )
    return (
        f"--max-servers {budget} {what} (round 1 starts up to {lineup + zero_k} servers, each of the "
        f"{rounds - 1} later rounds up to {lineup}); --max-servers {needed} would serve off and every candidate "
        f"in all {rounds} rounds"
    )


def hopeless_line(bound: float, margin: float) -> str:
    return (
        f"on this trace its simulated acceptance gives at most {bound:.3f} tokens per step at any K, below "
        f"{1 + margin:.2f} (off plus the margin) even if drafting and verifying cost nothing"
    )


def screened_line(ratio: float, screen: float = SCREEN) -> str:
    return (
        f"{ratio:.3f}x of off on this traffic, below {screen}x, which a server's start alone does not explain "
        "(no K = 0 server, no later round)"
    )


def all_screened_line(names: Sequence[str], screen: float = SCREEN) -> str:
    return (
        f"tune: every candidate served measured below {screen}x of off on this traffic in its first round "
        f"({', '.join(names)}); recommending speculation off"
    )
