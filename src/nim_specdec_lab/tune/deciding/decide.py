"""What tune recommends, decided on measured intervals (pure: figures in, a decision out).

Every measured configuration is compared with speculation off round by round: its n-th server against
off's n-th, started in the same pass over the lineup (tune.runs.rounds), one paired ratio per round at each
concurrency (stats.by_position): the speedup there with its 95% interval, and on this traffic those
combined with the capture's concurrency weights (stats.weighted).

A configuration that speculates is recommended only where all hold:
- on this traffic its interval lies above 1 + margin (`faster`): the traffic's log ratio is taken within
  each round and the interval runs over rounds (stats.weighted_by_round);
- it survives Holm's step-down over the whole lineup (`holm`): with m candidates, the one-sided p-values
  of "no more than 1 + margin" in ascending order, the i-th must be at most FAMILY / (m - i + 1), FAMILY
  5%, so that where no candidate helps, the chance that any is recommended stays at or below 5% however
  many are measured. With one or two candidates the 95% interval's own rule (2.5% on its faster side) is
  the stricter and Holm changes nothing; with four, the best must reach p <= 1.25%. A candidate that could
  not be compared still counts in m;
- at every concurrency that carries HEAVY (10%) or more of the traffic its interval excludes a loss beyond
  the margin (its low end above 1 - margin): a loss where much of the traffic runs is an interval question,
  not a point estimate's, and the margin is the one a gain must clear, so a true loss of exactly the
  margin there passes only where its interval misses on the high side (2.5% of runs);
- at no measured concurrency does its interval lie wholly below 1 (it measured slower than off there);
- the order its servers started in does not favour it beyond tune's own (a file for `tune --decide` in
  which off started two or more rounds more than it: tune.deciding.recorded_runs.order_biased).
The model's own choice comes first where it qualifies; otherwise the qualifying configuration with the
largest speedup on this traffic. Where every one measured slower than off on this traffic, off. Otherwise
tune cannot tell, says so in one line and recommends the safer choice: the configuration the user already
runs, where it was measured with an interval, is estimated at least at off's on the traffic and at every
heavy concurrency and was never wholly below off (keeping it claims no gain); else speculation off.

The interval shown for the configuration recommended is not its own: picked as the largest of m, its own
reads high. It is the simultaneous interval over the m candidates (stats.picked_interval, Bonferroni at
99%), which covers the pick's true speedup in at least 95% of the runs that pick it in the worlds the
lab measured; its own interval is shown beside it, labelled as its own.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from nim_specdec_lab import stats

Figures = Mapping[int, Mapping[int, float]]  # concurrency -> round -> tokens/s of that round's server
HEAVY = 0.10  # a concurrency with this share of the traffic or more must exclude a loss beyond the margin
FAMILY = 0.05  # the chance, across the lineup, of recommending speculation where none helps


@dataclass(frozen=True)
class Option:
    name: str
    config: Mapping[str, Any]  # the speculative config served
    figures: Figures
    proposal: bool = False  # the model's own choice
    current: bool = False  # what the user runs now
    order: str | None = None  # why the servers' order favours it beyond tune's own (recorded_runs.order_biased)


@dataclass(frozen=True)
class Comparison:
    option: Option
    by_c: Mapping[int, stats.Speedup | None]  # against off, per concurrency
    traffic: stats.Speedup | None  # against off, weighted by the capture's concurrency
    weights: Mapping[int, float]
    margin: float = stats.DEFAULT_MARGIN
    holm: bool = True  # survives Holm's step-down over the lineup (decide sets it)

    def slower_at(self) -> list[int]:
        return [c for c, s in sorted(self.by_c.items()) if stats.wholly_below(s)]

    def heavy(self) -> list[int]:
        total = sum(w for w in self.weights.values() if w > 0) or 1.0
        return sorted(c for c, w in self.weights.items() if w / total >= HEAVY)

    def below_where_heavy(self) -> list[int]:
        """Heavy concurrencies whose interval does not exclude a loss beyond the margin (or is missing)."""
        return [c for c in self.heavy() if not _excludes_loss(self.by_c.get(c), self.margin)]

    def estimated_below_where_heavy(self) -> list[int]:
        """Heavy concurrencies where the point estimate is below off's (or missing): what keeping the user's
        own configuration must avoid (keeping it claims no gain, only no loss seen)."""
        return [c for c in self.heavy() if self.by_c.get(c) is None or self.by_c[c].speedup < 1.0]

    def qualifies(self) -> bool:
        return (
            self.traffic is not None
            and self.traffic.verdict == stats.FASTER
            and self.holm
            and not self.below_where_heavy()
            and not self.slower_at()
            and self.option.order is None
        )


def _excludes_loss(s: stats.Speedup | None, margin: float) -> bool:
    return s is not None and s.interval is not None and s.interval[0] > 1.0 - margin


def holm(comparisons: Sequence[Comparison], family: float = FAMILY) -> set[str]:
    """The names Holm's step-down keeps at family-wise level `family` (one-sided p of each candidate on this
    traffic; a candidate without one counts in m and stops nothing but itself)."""
    m = len(comparisons)
    tested = sorted(
        (c.traffic.p_faster, c.option.name)
        for c in comparisons
        if c.traffic is not None and c.traffic.p_faster is not None
    )
    kept: set[str] = set()
    for i, (p, name) in enumerate(tested):
        if p > family / (m - i):
            break
        kept.add(name)
    return kept


@dataclass(frozen=True)
class Decision:
    recommended: Option | None  # None: speculation off
    comparisons: tuple[Comparison, ...]
    cannot_tell: bool
    line: str

    def picked(self) -> tuple[float, float] | None:
        """The interval of the configuration recommended, picked among the candidates compared
        (stats.picked_interval); None for off or without an interval."""
        if self.recommended is None:
            return None
        found = self.comparison(self.recommended.name)
        if found is None or found.traffic is None:
            return None
        return stats.picked_interval(found.traffic, len(self.comparisons))

    def picked_json(self) -> dict[str, Any] | None:
        """tune.json's `recommended_interval`: the interval as picked, its own beside it (labelled)."""
        found = self.picked()
        if found is None or self.recommended is None:
            return None
        own = self.comparison(self.recommended.name).traffic  # found: it has an interval
        assert own is not None and own.interval is not None
        return {
            "speedup": round(own.speedup, 4),
            "interval": [round(found[0], 4), round(found[1], 4)],
            "own_interval": [round(own.interval[0], 4), round(own.interval[1], 4)],
            "candidates": len(self.comparisons),
            "method": stats.PICKED_METHOD,
        }

    def comparison(self, name: str) -> Comparison | None:
        return next((c for c in self.comparisons if c.option.name == name), None)


def compare(off: Figures, option: Option, weights: Mapping[int, float], margin: float) -> Comparison:
    by_c = {c: stats.by_position(off[c], option.figures.get(c, {}), margin) for c in sorted(off)}
    used = [c for c, w in weights.items() if w > 0]
    if not used or any(by_c.get(c) is None for c in used):
        return Comparison(option, by_c, None, weights, margin)
    return Comparison(option, by_c, stats.weighted_by_round(off, option.figures, weights, margin), weights, margin)


def _shown(s: stats.Speedup | None) -> str:
    if s is None:
        return "not measured"
    if s.interval is None:
        return f"{s.speedup:.3f}x (one round: no interval)"
    return f"{s.speedup:.3f}x [{s.interval[0]:.3f}, {s.interval[1]:.3f}] over {s.rounds} rounds"


def _picked(s: stats.Speedup | None, family: int) -> str:
    found = None if s is None else stats.picked_interval(s, family)
    if s is None or found is None:
        return _shown(s)
    among = "as the only candidate" if family < 2 else f"as picked among {family} candidates"
    return (
        f"{s.speedup:.3f}x [{found[0]:.3f}, {found[1]:.3f}] {among} "
        f"(simultaneous over them: Bonferroni at {stats.PICKED_LEVEL:.1%})"
    )


def _slower(c: Comparison) -> str:
    return ", ".join(f"c={k} {_shown(c.by_c[k])}" for k in c.slower_at())


def _below(c: Comparison) -> str:
    total = sum(w for w in c.weights.values() if w > 0) or 1.0
    return ", ".join(
        f"c={k} {_shown(c.by_c.get(k))} ({c.weights[k] / total:.0%} of the traffic)" for k in c.below_where_heavy()
    )


def _would_tell(s: stats.Speedup | None, margin: float) -> str:
    """How many rounds would tell a gain of this size, where the point estimate is one: 80% power at the
    measured effect and spread (stats.rounds_to_resolve, a forecast); nothing beyond 100 rounds."""
    if s is None or s.log_sd is None or s.speedup <= 1 + margin:
        return ""
    needed = stats.rounds_to_resolve(s)
    if needed is None or needed <= s.rounds:
        return ""
    return f"; about {needed} rounds (--rounds) would tell a gain of this size at the spread measured"


def _family(comparisons: Sequence[Comparison]) -> str:
    if len(comparisons) < 2:
        return ""
    return f" across the {len(comparisons)} candidates measured (Holm, {FAMILY:.0%} family-wise)"


def _traffic_speedup(c: Comparison) -> tuple[float, str]:
    return (c.traffic.speedup if c.traffic is not None else 0.0, c.option.name)


def decide(off: Figures, options: Sequence[Option], weights: Mapping[int, float], margin: float) -> Decision:
    compared = [compare(off, o, weights, margin) for o in options]
    kept_by_holm = holm(compared)
    comparisons = tuple(replace(c, holm=c.option.name in kept_by_holm) for c in compared)
    qualified = [c for c in comparisons if c.qualifies()]
    if qualified:
        chosen = next((c for c in qualified if c.option.proposal), None)
        lead = ""
        if chosen is None:
            chosen = max(qualified, key=_traffic_speedup)
            proposal = next((c for c in comparisons if c.option.proposal), None)
            if proposal is not None:
                lead = f"the model's choice ({proposal.option.name}) did not measure faster than off; "
        heavy = ", ".join(f"c={k}" for k in chosen.heavy())
        line = (
            f"tune: {lead}recommending {chosen.option.name}: {_picked(chosen.traffic, len(comparisons))}; "
            f"its own interval {_shown(chosen.traffic)} of off on this traffic, "
            f"faster{_family(comparisons)}; not shown slower at any concurrency (a loss beyond {margin:.0%} "
            f"ruled out at {heavy}, each {HEAVY:.0%} or more of the traffic)"
        )
        return Decision(chosen.option, comparisons, False, line)
    if not comparisons:
        return Decision(None, comparisons, False, "tune: no candidate to compare with off; speculation off")
    best = next((c for c in comparisons if c.option.proposal), None) or max(comparisons, key=_traffic_speedup)
    if all(c.traffic is not None and c.traffic.verdict == stats.SLOWER for c in comparisons):
        line = "tune: speculation measured slower than off on this traffic: " + "; ".join(
            f"{c.option.name} {_shown(c.traffic)}" for c in comparisons
        )
        return Decision(None, comparisons, False, line + "; recommending speculation off")
    slower = [f"{c.option.name} measured slower than off at {_slower(c)}" for c in comparisons if c.slower_at()]
    slower += [
        f"{c.option.name} not shown free of a loss beyond {margin:.0%} at {_below(c)}"
        for c in comparisons
        if c.below_where_heavy()
    ]
    slower += [f"{c.option.name} not recommended: {c.option.order}" for c in comparisons if c.option.order]
    kept = next((c.option for c in comparisons if c.option.current and _safe_to_keep(c)), None)
    safer = f"keeping your configuration ({kept.name})" if kept else "recommending speculation off"
    if best.traffic is None or best.traffic.verdict != stats.FASTER:
        lead = "cannot tell whether speculation beats off on this traffic"
    elif best.option.order is not None:
        lead = "faster on this traffic, in an order that favours it"
    elif not best.holm:
        lead = (
            f"faster on this traffic on its own, not across the {len(comparisons)} candidates measured "
            f"(Holm, {FAMILY:.0%} family-wise)"
        )
    else:
        lead = "faster on this traffic, yet below off at a concurrency that rules it out"
    line = (
        f"tune: {lead}: {best.option.name} "
        f"{_shown(best.traffic)}{_would_tell(best.traffic, margin)}"
        + "".join(f"; {s}" for s in slower)
        + f"; {safer}, the safer choice"
    )
    return Decision(kept, comparisons, True, line)


def _safe_to_keep(c: Comparison) -> bool:
    """The user's own configuration stays where it was measured with an interval and was slower nowhere."""
    return (
        c.traffic is not None
        and c.traffic.interval is not None
        and c.traffic.speedup >= 1.0
        and not c.estimated_below_where_heavy()
        and not c.slower_at()
    )
