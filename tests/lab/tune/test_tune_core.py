"""The tuner's pure core: acceptance curves, the fitted step-cost model and the choice, table-driven."""

from __future__ import annotations

import pytest

from nim_specdec_lab.tune.model.acceptance import curve_from_positions, curve_from_simulation, slot_figures
from nim_specdec_lab.tune.model.choice import LOSS_FLOOR, choose, plan_method, to_ranges
from nim_specdec_lab.tune.model.cost_model import CostModel, MethodCost, Observation, fit

CONCURRENCIES = (1, 2, 4, 8)


def test_slot_figures_count_prefill_and_decode_slots():
    # 100 output tokens, 20 of them accepted drafts: 80 slots, 30 draft tokens verified in them.
    assert slot_figures(100, 20, 30) == (1.25, 0.375)
    assert slot_figures(0, 0, 0) == (1.0, 0.0)


def test_curve_from_positions_keeps_the_first_k_positions():
    # 10 drafting steps (+ 2 prefills = 12 slots when 8 + 4 = 12 were accepted of 24 output tokens).
    curve = curve_from_positions([8, 4], drafts=10, output_tokens=24, accepted=12)
    share = 10 / 12
    assert curve.kmax == 2
    assert curve.at(0).tokens_per_slot == 1.0 and curve.at(0).draft_tokens_per_slot == 0.0
    assert curve.at(1).tokens_per_slot == pytest.approx(1 + share * 0.8)
    assert curve.at(2).tokens_per_slot == pytest.approx(1 + share * 1.2)
    assert curve.at(2).draft_tokens_per_slot == pytest.approx(2 * share)
    # At the largest K the curve reproduces the measured run itself.
    assert curve.at(2).tokens_per_slot == pytest.approx(slot_figures(24, 12, 20)[0])


def test_curve_from_positions_refuses_a_run_without_drafts():
    with pytest.raises(ValueError, match="drafted nothing"):
        curve_from_positions([0, 0], drafts=0, output_tokens=10, accepted=0)


def test_curve_from_simulation_orders_k_and_needs_all_of_them():
    curve = curve_from_simulation([(2, 100, 30, 50), (1, 100, 20, 25)])
    assert [p.k for p in curve.points] == [0, 1, 2]
    assert curve.at(1).tokens_per_slot == pytest.approx(100 / 80)
    with pytest.raises(ValueError):
        curve_from_simulation([(1, 100, 20, 25), (3, 100, 20, 25)])


TRUE = CostModel(
    base_s=0.010,
    per_seq_s=0.002,
    methods={
        "ngram": MethodCost(per_k_s=0.0, per_draft_token_s=0.0015, per_step_s=0.0005),
        "draft_model": MethodCost(per_k_s=0.006, per_draft_token_s=0.0002, per_step_s=0.004, per_step_seq_s=0.0005),
    },
)
CURVES = {
    "ngram": curve_from_simulation([(1, 1000, 150, 400), (2, 1000, 220, 700), (3, 1000, 260, 950)]),
    "draft_model": curve_from_positions([5, 1, 0], drafts=900, output_tokens=1000, accepted=6),
}


def _observations(model: CostModel, method: str | None, k: int, curve=None) -> list[Observation]:
    """Runs a server obeying `model` would produce: 1000 output tokens per run."""
    out = []
    for c in CONCURRENCIES:
        tps = model.tokens_per_s(c, method, curve, k)
        if method is None:
            out.append(Observation(c, tps, 1000.0))
        else:
            point = curve.at(k)
            slots = 1000.0 / point.tokens_per_slot
            out.append(Observation(c, tps, 1000.0, k, 1000.0 - slots, point.draft_tokens_per_slot * slots))
    return out


def test_fit_recovers_the_model_that_produced_the_runs():
    # n-gram is model-free (its per-step cost fitted on its largest K); the draft model's server was also
    # measured at K = 0, which gives its per-step terms.
    fitted = fit(
        _observations(TRUE, None, 0),
        {m: _observations(TRUE, m, CURVES[m].kmax, CURVES[m]) for m in TRUE.methods},
        model_free=frozenset({"ngram"}),
        zero_k={"draft_model": _observations(TRUE, "draft_model", 0, CURVES["draft_model"])},
    )
    assert fitted.base_s == pytest.approx(TRUE.base_s, rel=1e-6)
    assert fitted.per_seq_s == pytest.approx(TRUE.per_seq_s, rel=1e-6)
    for method, cost in TRUE.methods.items():
        got = fitted.methods[method]
        for term in ("per_k_s", "per_draft_token_s", "per_step_s", "per_step_seq_s"):
            assert getattr(got, term) == pytest.approx(getattr(cost, term), rel=1e-6, abs=1e-12), (method, term)


def test_a_draft_models_k_zero_is_what_its_k_zero_server_measured():
    # K = 0 costs a draft model's server more than one of its passes (measured on the CPU: twice as much).
    true = CostModel(
        0.010,
        0.002,
        {"draft_model": MethodCost(per_k_s=0.003, per_draft_token_s=0.0002, per_step_s=0.002, per_step_seq_s=0.0008)},
    )
    curve = CURVES["draft_model"]
    off, top = _observations(true, None, 0), _observations(true, "draft_model", curve.kmax, curve)
    probed = fit(off, {"draft_model": top}, zero_k={"draft_model": _observations(true, "draft_model", 0, curve)})
    unprobed = fit(off, {"draft_model": top})
    for c in CONCURRENCIES:
        expected = true.tokens_per_s(c, "draft_model", curve, 0)
        assert probed.tokens_per_s(c, "draft_model", curve, 0) == pytest.approx(expected, rel=1e-6)
        # Both reproduce the runs at the largest K they were fitted on ...
        for model in (probed, unprobed):
            assert model.tokens_per_s(c, "draft_model", curve, curve.kmax) == pytest.approx(
                true.tokens_per_s(c, "draft_model", curve, curve.kmax), rel=1e-6
            )
    # ... but without the K = 0 server the first pass is priced like the others, and K = 0 at the
    # largest batch looks faster than it is.
    unprobed_cost = unprobed.methods["draft_model"]
    assert unprobed_cost.per_step_s == unprobed_cost.per_k_s > 0 and unprobed_cost.per_step_seq_s == 0.0
    assert unprobed.tokens_per_s(8, "draft_model", curve, 0) > 1.05 * true.tokens_per_s(8, "draft_model", curve, 0)
    # Every step of a speculating draft-model server pays at least its first pass: K = 0 is slower than off.
    assert probed.tokens_per_s(8, "draft_model", curve, 0) < probed.tokens_per_s(8, None, None, 0)


def test_fit_keeps_costs_non_negative_when_speculation_looks_free():
    off = _observations(TRUE, None, 0)
    # Runs slightly faster than even a free speculation would allow: noise, not a negative cost.
    fast = [Observation(o.concurrency, o.tokens_per_s * 1.5, 1000.0, 3, 300.0, 600.0) for o in off]
    cost = fit(off, {"ngram": fast}).methods["ngram"]
    assert cost.per_k_s == 0.0 and cost.per_draft_token_s == 0.0


def test_fit_with_one_concurrency_is_flat():
    off = [Observation(4, 400.0, 1000.0)]
    fitted = fit(off, {"ngram": [Observation(4, 300.0, 1000.0, 3, 200.0, 500.0)]})
    assert fitted.per_seq_s == 0.0 and fitted.base_s == pytest.approx(0.01)
    # Whatever was fitted reproduces the one measurement it came from.
    curve = curve_from_simulation([(1, 1000, 100, 200), (2, 1000, 150, 350), (3, 1000, 200, 500)])
    assert fitted.tokens_per_s(4, "ngram", curve, 3) == pytest.approx(300.0)


@pytest.mark.parametrize(
    "ks,ranges",
    [
        ((3, 3, 0, 0), ((1, 2, 3), (3, 4, 0))),
        ((2,), ((1, 1, 2),)),
        ((0, 0, 0), ((1, 3, 0),)),
        ((3, 1, 1, 0, 1), ((1, 1, 3), (2, 3, 1), (4, 4, 0), (5, 5, 1))),
    ],
)
def test_to_ranges(ks, ranges):
    assert to_ranges(ks) == ranges


# (id, cost of the ngram method, acceptance, expected K at batch sizes 1 and 8)
CHOICES = [
    ("cheap-drafts-pay-everywhere", MethodCost(0.0, 0.0001), CURVES["ngram"], (3, 3)),
    ("costly-verification-pays-only-small", MethodCost(0.0, 0.0030), CURVES["ngram"], ("k>0", 0)),
    (
        "never-accepted-never-speculates",
        MethodCost(0.0, 0.0001),
        curve_from_simulation([(1, 1000, 0, 300), (2, 1000, 0, 600), (3, 1000, 0, 900)]),
        (0, 0),
    ),
]


@pytest.mark.parametrize("case_id,cost,curve,expected", CHOICES, ids=[c[0] for c in CHOICES])
def test_schedule_per_batch_size(case_id, cost, curve, expected):
    model = CostModel(0.010, 0.002, {"ngram": cost})
    plan = plan_method(model, "ngram", curve, CONCURRENCIES)
    at1, at8 = plan.k_by_batch[0], plan.k_by_batch[7]
    assert (at1 > 0 if expected[0] == "k>0" else at1 == expected[0]) and at8 == expected[1]
    for c in CONCURRENCIES:  # the schedule is never predicted slower than off
        assert plan.predicted[c] >= model.tokens_per_s(c, None, None, 0) - 1e-9


def test_a_disagreeing_draft_is_never_chosen():
    choice = choose(TRUE, {"draft_model": CURVES["draft_model"]}, CONCURRENCIES)
    assert choice.chosen is None
    assert not choice.plans[0].speculates


def test_the_best_method_wins_and_a_loser_keeps_k_zero():
    choice = choose(TRUE, CURVES, CONCURRENCIES)
    assert choice.chosen is not None and choice.chosen.method == "ngram"
    assert [p.method for p in choice.plans] == ["ngram", "draft_model"]
    assert choice.chosen.score > 1.0


def test_margin_keeps_k_zero_where_the_gain_is_small():
    model = CostModel(0.010, 0.002, {"ngram": MethodCost(0.0, 0.0030)})
    loose = plan_method(model, "ngram", CURVES["ngram"], CONCURRENCIES, margin=0.0)
    strict = plan_method(model, "ngram", CURVES["ngram"], CONCURRENCIES, margin=0.5)
    assert sum(strict.k_by_batch) < sum(loose.k_by_batch)


def test_fit_puts_a_model_free_methods_fixed_cost_on_every_step():
    true = CostModel(0.010, 0.002, {"ngram": MethodCost(0.0, 0.0015, per_step_s=0.003)})
    runs = _observations(true, "ngram", 3, CURVES["ngram"])
    fitted = fit(_observations(true, None, 0), {"ngram": runs}, model_free=frozenset({"ngram"}))
    cost = fitted.methods["ngram"]
    assert cost.per_step_s == pytest.approx(0.003, rel=1e-6) and cost.per_k_s == 0.0
    assert cost.per_draft_token_s == pytest.approx(0.0015, rel=1e-6)
    # Fitted as a draft model's (K passes, the first on every step), the same runs put that cost on K
    # instead: a third per pass at K = 3, and K = 0 would cost one pass, not all of it.
    as_draft = fit(_observations(true, None, 0), {"ngram": runs}).methods["ngram"]
    assert as_draft.per_step_s == as_draft.per_k_s == pytest.approx(0.001, rel=1e-6)


def test_k_zero_on_a_speculating_server_pays_its_per_step_cost():
    model = CostModel(0.010, 0.002, {"ngram": MethodCost(0.0, 0.0030, per_step_s=0.002)})
    off = model.tokens_per_s(4, None, None, 0)
    assert model.tokens_per_s(4, "ngram", CURVES["ngram"], 0) == pytest.approx(4 / (0.010 + 0.008 + 0.002))
    assert model.tokens_per_s(4, "ngram", CURVES["ngram"], 0) < off


def test_a_schedule_that_would_lose_to_off_on_its_k_zero_steps_is_not_chosen():
    # Drafting pays a little at batch size 1 only; the per-step cost at every other batch size loses more.
    model = CostModel(0.010, 0.002, {"ngram": MethodCost(0.0, 0.0030, per_step_s=0.003)})
    choice = choose(model, {"ngram": CURVES["ngram"]}, CONCURRENCIES)
    assert choice.plans[0].speculates and choice.plans[0].score < 1.0
    assert choice.chosen is None
    # Without that cost the same drafts are worth a schedule.
    free = CostModel(0.010, 0.002, {"ngram": MethodCost(0.0, 0.0030)})
    assert choose(free, {"ngram": CURVES["ngram"]}, CONCURRENCIES).chosen is not None


def test_a_draft_that_pays_small_but_loses_large_is_not_chosen():
    # The draft gains at batch size 1, but every step pays a costly K = 0 pass: at 8 even its best K keeps
    # less than LOSS_FLOOR of off, whatever the mean over the sweep says.
    curve = curve_from_positions([900, 800, 700], drafts=1000, output_tokens=3400, accepted=2400)
    heavy = CostModel(0.010, 0.002, {"draft_model": MethodCost(0.001, 0.0001, per_step_s=0.001, per_step_seq_s=0.012)})
    plan = plan_method(heavy, "draft_model", curve, CONCURRENCIES)
    assert plan.score > 1.0 and plan.best_ratio > 1.03 and plan.worst_ratio < LOSS_FLOOR
    assert choose(heavy, {"draft_model": curve}, CONCURRENCIES).chosen is None
    light = CostModel(0.010, 0.002, {"draft_model": MethodCost(0.001, 0.0001, per_step_s=0.001)})
    assert choose(light, {"draft_model": curve}, CONCURRENCIES).chosen is not None


@pytest.mark.parametrize(
    "explicit, trace_len, concurrency, mean_output, expected",
    [
        (None, 4, 1, 32.0, 64),  # 2048 output tokens of 32-token completions
        (None, 4, 16, 32.0, 128),  # 8 per slot is more
        (None, 300, 1, 32.0, 300),  # every captured request is more
        (None, 4, 1, None, 8),  # no recorded length: the count rules alone
        (5, 300, 16, 32.0, 5),  # --requests-per-run wins
    ],
)
def test_run_count(explicit, trace_len, concurrency, mean_output, expected):
    from nim_specdec_lab.tune.runs.measurement import MeasureOptions, run_count

    settings = MeasureOptions((1,), explicit, None, False, None, 60.0)
    assert run_count(settings, trace_len, concurrency, mean_output) == expected


@pytest.mark.parametrize(
    "env, expected",
    [
        ({"NIM_MODEL_PATH": "/m"}, "120"),  # tune's servers keep idle pooled connections past vLLM's 5 s
        ({"NIM_MODEL_PATH": "/m", "VLLM_HTTP_TIMEOUT_KEEP_ALIVE": "7"}, "7"),  # the user's value stays
    ],
)
def test_server_env_keeps_idle_connections_unless_the_user_chose(env, expected):
    from nim_specdec_lab.tune.servers import with_long_keep_alive

    got = with_long_keep_alive(env)
    assert got["VLLM_HTTP_TIMEOUT_KEEP_ALIVE"] == expected and got["NIM_MODEL_PATH"] == "/m"
