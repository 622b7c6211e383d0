"""tune's own decision procedure under a noise model of this kind of machine, 1000 simulated tunes per world.

One simulated tune does what tune.session does, with the same functions: round 1 measures off and n-gram at
K = 4 at every concurrency; the cost model is fitted on those runs (fitting.fitted) and chooses (choice.choose,
candidates.scheduled_config); the choice, unless it is the static n-gram, joins the lineup; every round then
measures the lineup, rotated from round 2 on (tune.runs.rounds.order_of); decide.decide recommends on the paired
rounds. The servers obey a true cost model; every run's figure is off by a log-normal factor of sd `sigma` of
its own, every server by a start effect of its own shared by all its concurrencies (sd START_SD), and every
server of a round shares a slow or fast stretch of the machine (sd 0.3, which cancels in a ratio). The
capture has 3 requests in flight on average (weights on concurrencies 2 and 4). The worlds of
test_noise_study.py add a position effect, drift within a round and A/A candidates.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import pytest

from nim_specdec.engines.vllm.observe.spec_counters import SpecCounters
from nim_specdec_lab import stats
from nim_specdec_lab.replay.spec import ReplayMeasurement
from nim_specdec_lab.tune.deciding.decide import Option, decide
from nim_specdec_lab.tune.deciding.fitting import MethodRuns, fitted
from nim_specdec_lab.tune.lineup import candidates as cand
from nim_specdec_lab.tune.model.acceptance import curve_from_simulation
from nim_specdec_lab.tune.model.choice import choose
from nim_specdec_lab.tune.model.cost_model import CostModel, MethodCost
from nim_specdec_lab.tune.runs.rounds import order_of

CONCURRENCIES = (1, 2, 4, 8, 16)
LEVEL = 3.0
DRIFT = 0.3
START_SD = 0.05
MARGIN = 0.03
BASE_S, PER_SEQ_S = 0.010, 0.002
# n-gram always drafting K: 1.25, 1.49, 1.67 and 1.8 tokens per step at K = 1..4.
ACCEPTED = {1: 200.0, 2: 330.0, 3: 400.0, 4: 1000.0 - 1000.0 / 1.8}
CURVE = curve_from_simulation([(k, 1000.0, a, k * (1000.0 - a)) for k, a in ACCEPTED.items()])
NGRAM = cand.Candidate("ngram", cand.ngram_config(4, 1, 3), configured=False)


def world(at_1: float, at_16: float) -> CostModel:
    """The true costs that make n-gram at K = 4 `at_1` x off at concurrency 1 and `at_16` x at 16: its per-step
    and per-draft-token costs solved from those two ratios."""
    point = CURVE.at(4)
    need = {c: (BASE_S + PER_SEQ_S * c) * (point.tokens_per_slot / r - 1.0) for c, r in ((1, at_1), (16, at_16))}
    per_token = (need[16] - need[1]) / (15 * point.draft_tokens_per_slot)
    per_step = need[1] - per_token * point.draft_tokens_per_slot
    assert per_step >= 0 and per_token >= 0
    return CostModel(BASE_S, PER_SEQ_S, {"ngram": MethodCost(0.0, per_token, per_step_s=per_step)})


def true_tokens_per_s(model: CostModel, config: dict | None, c: int) -> float:
    if config is None:
        return model.tokens_per_s(c, None, None, 0)
    return model.tokens_per_s(c, "ngram", CURVE, cand.k_at(config, c))


def server_runs(model: CostModel, config: dict | None, factor: float, rng: random.Random, sigma: float) -> dict:
    """One server's run at every concurrency, each its own draw of the run noise."""
    out = {}
    for c in CONCURRENCIES:
        tps = true_tokens_per_s(model, config, c) * factor * math.exp(rng.gauss(0, sigma))
        spec = None
        if config is not None:
            point = CURVE.at(cand.k_at(config, c))
            slots = 2048 / point.tokens_per_slot
            spec = SpecCounters(slots, point.draft_tokens_per_slot * slots, 2048 - slots, ())
        latency = c * 2048 / 16 / tps
        out[c] = ReplayMeasurement(
            16, 16, c, "closed", 1.0, 2048, tps, {}, {}, {}, spec, None, {"latency_mean_s": latency}
        )
    return out


@dataclass(frozen=True)
class Outcome:
    recommended: dict | None
    cannot_tell: bool
    proposal: dict | None


def one_tune(model: CostModel, sigma: float, rounds: int, rng: random.Random) -> Outcome:
    lineup: list[tuple[str, dict | None]] = [("off", None), ("ngram-k4", dict(NGRAM.config))]
    figures: dict[str, dict[int, dict[int, float]]] = {}
    first: dict[str, dict] = {}

    def serve(name: str, config: dict | None, round_no: int, drift: float) -> None:
        runs = server_runs(model, config, drift * math.exp(rng.gauss(0, START_SD)), rng, sigma)
        first.setdefault(name, runs)
        for c, r in runs.items():
            figures.setdefault(name, {}).setdefault(c, {})[round_no] = r.output_tokens_per_s

    drift = math.exp(rng.gauss(0, DRIFT))
    for name, config in lineup:
        serve(name, config, 1, drift)
    fit, curves = fitted(first["off"], {"ngram": MethodRuns(4, first["ngram-k4"], None, CURVE, model_free=True)})
    choice = choose(fit, curves, CONCURRENCIES, MARGIN)
    proposal = cand.scheduled_config(NGRAM, choice.chosen.ranges()) if choice.chosen else None
    name = next((n for n, c in lineup if c == proposal), None)
    if name is None:
        name = "model-choice"
        lineup.append((name, proposal))
        serve(name, proposal, 1, drift)
    configs = dict(lineup)
    for round_no in range(2, rounds + 1):
        drift = math.exp(rng.gauss(0, DRIFT))
        for n in order_of([n for n, _ in lineup], round_no):
            serve(n, configs[n], round_no, drift)
    options = [Option(n, c, figures[n], proposal=n == name) for n, c in lineup if c is not None]
    decision = decide(figures["off"], options, stats.concurrency_weights(LEVEL, CONCURRENCIES), MARGIN)
    recommended = None if decision.recommended is None else dict(decision.recommended.config)
    return Outcome(recommended, decision.cannot_tell, proposal)


def true_ratios(model: CostModel, config: dict | None) -> dict[int, float]:
    return {c: true_tokens_per_s(model, config, c) / true_tokens_per_s(model, None, c) for c in CONCURRENCIES}


def slower_on_traffic(model: CostModel, config: dict | None) -> bool:
    if config is None:
        return False
    ratios, weights = true_ratios(model, config), stats.concurrency_weights(LEVEL, CONCURRENCIES)
    return sum(w * math.log(ratios[c]) for c, w in weights.items()) < 0.0


def slower_somewhere(model: CostModel, config: dict | None) -> bool:
    """Slower than off by more than the margin at some swept concurrency, with traffic there or not."""
    return config is not None and min(true_ratios(model, config).values()) < 1.0 - MARGIN


def tally(model: CostModel, sigma: float, rounds: int, runs: int = 1000, seed: int = 11) -> dict[str, int]:
    rng = random.Random(seed)
    names = ("speculation", "slower on traffic", "slower somewhere", "cannot tell", "not off", "chosen on round 1")
    counts = dict.fromkeys(names, 0)
    for _ in range(runs):
        got = one_tune(model, sigma, rounds, rng)
        counts["speculation"] += got.recommended is not None
        counts["slower on traffic"] += slower_on_traffic(model, got.recommended)
        counts["slower somewhere"] += slower_somewhere(model, got.recommended)
        counts["cannot tell"] += got.cannot_tell
        counts["not off"] += got.cannot_tell and got.recommended is not None  # where it could not tell
        counts["chosen on round 1"] += got.proposal is not None  # the model's choice on single runs: speculation
    return counts


def test_the_worlds_are_what_they_say():
    small = world(1.08, 1.00)
    ratio = {c: true_tokens_per_s(small, NGRAM.config, c) / true_tokens_per_s(small, None, c) for c in (1, 16)}
    assert ratio == pytest.approx({1: 1.08, 16: 1.00})
    large = world(1.3, 1.3)
    assert true_tokens_per_s(large, NGRAM.config, 4) / true_tokens_per_s(large, None, 4) == pytest.approx(1.3)


def test_a_small_gain_under_heavy_noise_is_not_told_and_falls_back_to_off():
    # A true 1.08x at concurrency 1 falling to 1.00x at 16, run noise sigma 0.2. The model's choice on round 1's
    # single runs speculates in more than half of the runs (a static K or a schedule); measured in rounds,
    # speculation is recommended in a few, and almost never where it is slower than off on the traffic.
    # Measured: chosen on round 1 606, recommended 2, slower on traffic 1, slower somewhere 1, cannot tell 996.
    counts = tally(world(1.08, 1.00), sigma=0.2, rounds=3)
    assert counts["chosen on round 1"] >= 500, counts
    assert counts["slower on traffic"] <= 5 and counts["slower somewhere"] <= 10, counts
    assert counts["cannot tell"] >= 940 and counts["not off"] == 0, counts


def test_a_true_1_3x_at_sigma_0_1_is_recommended_with_enough_rounds():
    model = world(1.3, 1.3)
    # Measured: 787 of 1000 at 5 rounds, 223 at 3, 8 of 300 at 2. Each concurrency carrying 10% of the traffic
    # or more must rule out a loss beyond the margin by its own interval (decide.py), which two degrees of
    # freedom rarely do: 3 rounds told this gain in 510 of 1000 when the busy concurrencies were judged by
    # their point estimates, 911 at 5.
    five = tally(model, sigma=0.1, rounds=5)
    assert five["speculation"] >= 740 and five["slower on traffic"] == 0, five
    # The model's schedule sometimes drops K where the fit misread a large batch the traffic never reaches: a
    # loss there of more than the margin, too small for the rounds to see, in a few runs per thousand.
    assert five["slower somewhere"] <= 5, five
    # Three rounds, tune's default, tell it in about one run in five and say "cannot tell" (off) in the
    # others; two rounds (one degree of freedom) almost never.
    three = tally(model, sigma=0.1, rounds=3)
    assert 150 <= three["speculation"] < 350 and three["slower on traffic"] == 0, three
    assert three["not off"] == 0
    assert tally(model, sigma=0.1, rounds=2, runs=300)["speculation"] <= 30
