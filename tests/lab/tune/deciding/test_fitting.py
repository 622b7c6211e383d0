"""The fit on measured runs and its held-out prediction: a concurrency is predicted by a fit that never saw it."""

from __future__ import annotations

import pytest

from nim_specdec.engines.vllm.observe.spec_counters import SpecCounters
from nim_specdec_lab.replay.spec import ReplayMeasurement
from nim_specdec_lab.tune.deciding.fitting import MethodRuns, fitted, held_out_prediction
from nim_specdec_lab.tune.lineup.candidates import k_at
from nim_specdec_lab.tune.model.acceptance import curve_from_positions, curve_from_simulation
from nim_specdec_lab.tune.model.cost_model import CostModel, MethodCost

CONCURRENCIES = (1, 2, 4, 8)
TRUE = CostModel(
    0.010,
    0.002,
    {
        "ngram": MethodCost(0.0, 0.0015, per_step_s=0.0005),
        "draft_model": MethodCost(per_k_s=0.003, per_draft_token_s=0.0002, per_step_s=0.002, per_step_seq_s=0.0004),
    },
)
NGRAM_CURVE = curve_from_simulation([(1, 1000, 150, 400), (2, 1000, 220, 700), (3, 1000, 260, 950)])
DRAFT_CURVE = curve_from_positions([600, 400, 200], drafts=1000, output_tokens=3000, accepted=1200)


def run(c: int, method: str | None, k: int, curve=None, scale: float = 1.0) -> ReplayMeasurement:
    """A run a server obeying TRUE would give: 2048 output tokens; its figure is what the server sustained."""
    tps = TRUE.tokens_per_s(c, method, curve, k) * scale
    spec = None
    if method is not None:
        point = curve.at(k)
        slots = 2048 / point.tokens_per_slot
        per_position = tuple(
            DRAFT_CURVE.at(i + 1).tokens_per_slot - DRAFT_CURVE.at(i).tokens_per_slot for i in range(k)
        )
        drafts = slots if k else 0.0
        spec = SpecCounters(
            drafts, point.draft_tokens_per_slot * slots, 2048 - slots, tuple(p * drafts for p in per_position)
        )
    latency = c * 2048 / 16 / tps  # server_tokens_per_s = c x (2048 / 16) / latency
    return ReplayMeasurement(16, 16, c, "closed", 1.0, 2048, tps, {}, {}, {}, spec, None, {"latency_mean_s": latency})


def sweep(method: str | None, k: int, curve=None, skew: dict | None = None) -> dict[int, ReplayMeasurement]:
    return {c: run(c, method, k, curve, (skew or {}).get(c, 1.0)) for c in CONCURRENCIES}


def methods(skew: dict | None = None) -> dict[str, MethodRuns]:
    return {
        "ngram": MethodRuns(3, sweep("ngram", 3, NGRAM_CURVE, skew), None, NGRAM_CURVE, model_free=True),
        "draft_model": MethodRuns(3, sweep("draft_model", 3, DRAFT_CURVE, skew), sweep("draft_model", 0, DRAFT_CURVE)),
    }


def test_the_fit_recovers_the_servers_costs_and_the_drafts_curve():
    model, curves = fitted(sweep(None, 0), methods())
    assert curves["ngram"] is NGRAM_CURVE and curves["draft_model"].source == "server counters"
    for c in CONCURRENCIES:
        for k in range(4):
            assert model.tokens_per_s(c, "ngram", NGRAM_CURVE, k) == pytest.approx(
                TRUE.tokens_per_s(c, "ngram", NGRAM_CURVE, k), rel=1e-6
            )
    assert model.methods["draft_model"].per_step_s == pytest.approx(0.002, rel=1e-6)


SCHEDULE = {
    "method": "ngram",
    "num_speculative_tokens": 3,
    "num_speculative_tokens_per_batch_size": [[1, 2, 3], [3, 4, 1]],
}


@pytest.mark.parametrize("held", [1, 2, 4, 8])
@pytest.mark.parametrize("config", [None, {"method": "ngram", "num_speculative_tokens": 3}, SCHEDULE])
def test_a_held_out_concurrency_is_predicted_from_the_others_alone(held, config):
    exact = held_out_prediction(sweep(None, 0), methods(), config, held)
    method, k = (None, 0) if config is None else ("ngram", k_at(config, held))
    assert exact == pytest.approx(TRUE.tokens_per_s(held, method, NGRAM_CURVE if method else None, k), rel=1e-6)
    # Whatever was measured at the held-out concurrency, by any server, the prediction there is the same:
    # no run at that concurrency enters its fit.
    skew = {held: 0.5}
    assert held_out_prediction(sweep(None, 0, skew=skew), methods(skew), config, held) == pytest.approx(exact)
    # ... while a run at another concurrency does move it.
    other = next(c for c in CONCURRENCIES if c != held)
    moved = held_out_prediction(sweep(None, 0, skew={other: 0.5}), methods({other: 0.5}), config, held)
    assert moved != pytest.approx(exact)


def test_nothing_left_to_fit_on_predicts_nothing():
    one = {4: run(4, None, 0)}
    assert held_out_prediction(one, {}, None, 4) is None
    # A draft model's curve comes from its own counters: without them at the other concurrencies, none.
    draft = {"method": "draft_model", "num_speculative_tokens": 3}
    lone = {"draft_model": MethodRuns(3, {4: run(4, "draft_model", 3, DRAFT_CURVE)})}
    assert held_out_prediction(sweep(None, 0), lone, draft, 4) is None


@pytest.mark.parametrize(
    "config,batch,k",
    [
        ({"num_speculative_tokens": 4}, 16, 4),
        (SCHEDULE, 1, 3),
        (SCHEDULE, 2, 3),
        (SCHEDULE, 3, 1),
        (SCHEDULE, 64, 1),  # beyond the last range vLLM carries its K on
    ],
)
def test_k_at_a_batch_size(config, batch, k):
    assert k_at(config, batch) == k
