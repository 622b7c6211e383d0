"""The cost model fitted on measured runs: one run per concurrency of off and of each candidate's servers
(those of one round, or each configuration's median round over all of them), a draft model's acceptance
curve from its own server's counters, and the prediction of a configuration at a concurrency the fit did
not see (the held-out check)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from nim_specdec_lab.replay import ReplayMeasurement
from nim_specdec_lab.tune.lineup.candidates import k_at
from nim_specdec_lab.tune.model.acceptance import AcceptanceCurve, curve_from_positions
from nim_specdec_lab.tune.model.cost_model import CostModel, Observation, fit
from nim_specdec_lab.tune.runs.measurement import judged_tokens_per_s

Runs = Mapping[int, ReplayMeasurement]  # concurrency -> the run that stands for it


@dataclass(frozen=True)
class MethodRuns:
    """What one candidate method brings to a fit."""

    kmax: int
    at_kmax: Runs  # its server at the largest K
    at_zero: Runs | None = None  # a draft model's server with K = 0 at every batch size
    curve: AcceptanceCurve | None = None  # a model-free method's simulated curve; None: from at_kmax's counters
    model_free: bool = False


def observations(runs: Runs, k: int) -> list[Observation]:
    out = []
    for c, r in sorted(runs.items()):
        spec = r.spec
        out.append(
            Observation(
                c,
                judged_tokens_per_s(r),
                float(r.output_tokens),
                k if spec else 0,
                spec.accepted if spec else 0.0,
                spec.draft_tokens if spec else 0.0,
            )
        )
    return out


def drafted(runs: Runs) -> bool:
    return any(r.spec is not None and r.spec.draft_tokens > 0 for r in runs.values())


def counter_curve(runs: Runs) -> AcceptanceCurve | None:
    """Per-position acceptance of a model draft, summed over every concurrency it ran at; None where it
    drafted nothing."""
    specs = [r.spec for r in runs.values() if r.spec is not None]
    width = max((len(s.per_position) for s in specs), default=0)
    per_pos = [sum(s.per_position[i] for s in specs if i < len(s.per_position)) for i in range(width)]
    try:
        return curve_from_positions(
            per_pos,
            sum(s.drafts for s in specs),
            sum(r.output_tokens for r in runs.values() if r.spec is not None),
            sum(s.accepted for s in specs),
        )
    except ValueError:
        return None


def fitted(off: Runs, methods: Mapping[str, MethodRuns]) -> tuple[CostModel, dict[str, AcceptanceCurve]]:
    """The cost model and the acceptance curve of every method that has one (a draft that drafted nothing
    has none and is left out)."""
    curves: dict[str, AcceptanceCurve] = {}
    for name, runs in methods.items():
        curve = runs.curve if runs.curve is not None else counter_curve(runs.at_kmax)
        if curve is not None:
            curves[name] = curve
    model = fit(
        observations(off, 0),
        {m: observations(methods[m].at_kmax, methods[m].kmax) for m in curves},
        frozenset(m for m in curves if methods[m].model_free),
        {m: observations(methods[m].at_zero, 0) for m in curves if methods[m].at_zero},
    )
    return model, curves


def _without(runs: Runs | None, concurrency: int) -> dict[int, ReplayMeasurement]:
    return {c: r for c, r in (runs or {}).items() if c != concurrency}


def held_out_prediction(
    off: Runs, methods: Mapping[str, MethodRuns], config: Mapping[str, Any] | None, concurrency: int
) -> float | None:
    """Tokens/s predicted for `config` (None: off) at `concurrency` by a fit on every other concurrency of
    these runs; None where nothing is left to fit on or the config's method has no curve without it."""
    rest = _without(off, concurrency)
    if not rest:
        return None
    kept = {
        m: MethodRuns(
            r.kmax, _without(r.at_kmax, concurrency), _without(r.at_zero, concurrency) or None, r.curve, r.model_free
        )
        for m, r in methods.items()
        if _without(r.at_kmax, concurrency)
    }
    model, curves = fitted(rest, kept)
    if config is None:
        return model.tokens_per_s(concurrency, None, None, 0)
    method = str(config["method"])
    if method not in curves:
        return None
    k = min(k_at(config, concurrency), curves[method].kmax)
    return model.tokens_per_s(concurrency, method, curves[method], k)
