"""What tune recommends, decided on measured intervals (pure: figures in, a decision out).

Every measured configuration is compared with speculation off round by round: its n-th server against
off's n-th, started in the same pass over the lineup (tune.rounds), one paired ratio per round at each
concurrency (stats.by_position): the speedup there with its 95% interval, and on this traffic those
combined with the capture's concurrency weights (stats.weighted).

A configuration that speculates is recommended only where both hold:
- on this traffic its interval lies above 1 + margin (`faster`);
- at no measured concurrency does its interval lie wholly below 1 (it measured slower than off there).
The model's own choice comes first where it qualifies: it was chosen from round 1 before any of its own
rounds were measured, so its figures are not the ones that picked it. Otherwise the qualifying
configuration with the largest speedup on this traffic. Where every one measured slower than off on this
traffic, off. Otherwise tune cannot tell, says so in one line and recommends the safer choice: the
configuration the user already runs, where it was measured with an interval and never wholly below off,
else speculation off.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from nim_specdec_lab import stats

Figures = Mapping[int, Mapping[int, float]]  # concurrency -> round -> tokens/s of that round's server


@dataclass(frozen=True)
class Option:
    name: str
    config: Mapping[str, Any]  # the speculative config served
    figures: Figures
    proposal: bool = False  # the model's own choice
    current: bool = False  # what the user runs now


@dataclass(frozen=True)
class Comparison:
    option: Option
    by_c: Mapping[int, stats.Speedup | None]  # against off, per concurrency
    traffic: stats.Speedup | None  # against off, weighted by the capture's concurrency

    def slower_at(self) -> list[int]:
        return [c for c, s in sorted(self.by_c.items()) if stats.wholly_below(s)]

    def qualifies(self) -> bool:
        return self.traffic is not None and self.traffic.verdict == stats.FASTER and not self.slower_at()


@dataclass(frozen=True)
class Decision:
    recommended: Option | None  # None: speculation off
    comparisons: tuple[Comparison, ...]
    cannot_tell: bool
    line: str

    def comparison(self, name: str) -> Comparison | None:
        return next((c for c in self.comparisons if c.option.name == name), None)


def compare(off: Figures, option: Option, weights: Mapping[int, float], margin: float) -> Comparison:
    by_c = {c: stats.by_position(off[c], option.figures.get(c, {}), margin) for c in sorted(off)}
    parts = {c: s for c, s in by_c.items() if s is not None}
    used = [c for c, w in weights.items() if w > 0]
    if not used or any(c not in parts for c in used):
        return Comparison(option, by_c, None)
    traffic = stats.weighted(parts, weights, margin)
    if traffic is None:  # one round somewhere: a point estimate, without an interval or a verdict
        total = sum(weights[c] for c in used)
        traffic = stats.from_log_ratios([sum(weights[c] * parts[c].log_mean for c in used) / total], margin)
    return Comparison(option, by_c, traffic)


def _shown(s: stats.Speedup | None) -> str:
    if s is None:
        return "not measured"
    if s.interval is None:
        return f"{s.speedup:.3f}x (one round: no interval)"
    return f"{s.speedup:.3f}x [{s.interval[0]:.3f}, {s.interval[1]:.3f}] over {s.rounds} rounds"


def _slower(c: Comparison) -> str:
    return ", ".join(f"c={k} {_shown(c.by_c[k])}" for k in c.slower_at())


def _would_tell(s: stats.Speedup | None, margin: float) -> str:
    """How many rounds would tell a gain of this size at this spread, where the point estimate is one."""
    if s is None or s.log_sd is None or s.speedup <= 1 + margin:
        return ""
    needed = stats.rounds_to_resolve(s.log_sd, s.speedup, margin)
    if needed is None or needed <= s.rounds:
        return ""
    return f"; about {needed} rounds (--rounds) would tell a gain of this size at this spread"


def _traffic_speedup(c: Comparison) -> tuple[float, str]:
    return (c.traffic.speedup if c.traffic is not None else 0.0, c.option.name)


def decide(off: Figures, options: Sequence[Option], weights: Mapping[int, float], margin: float) -> Decision:
    comparisons = tuple(compare(off, o, weights, margin) for o in options)
    qualified = [c for c in comparisons if c.qualifies()]
    if qualified:
        chosen = next((c for c in qualified if c.option.proposal), None)
        lead = ""
        if chosen is None:
            chosen = max(qualified, key=_traffic_speedup)
            proposal = next((c for c in comparisons if c.option.proposal), None)
            if proposal is not None:
                lead = f"the model's choice ({proposal.option.name}) did not measure faster than off; "
        line = (
            f"tune: {lead}recommending {chosen.option.name}: {_shown(chosen.traffic)} of off on this traffic, "
            "faster, and at no concurrency below off"
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
    kept = next((c.option for c in comparisons if c.option.current and _safe_to_keep(c)), None)
    safer = f"keeping your configuration ({kept.name})" if kept else "recommending speculation off"
    line = (
        f"tune: cannot tell whether speculation beats off on this traffic: {best.option.name} "
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
        and c.traffic.verdict != stats.SLOWER
        and not c.slower_at()
    )
