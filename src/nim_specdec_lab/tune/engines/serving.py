"""The recommendation against the engine that will serve it: a schedule that engine would drop falls back to
the best static K, and every way it differs from the measured server is said with what it means for the
figures. Pure: the fitted model, the curves and the records arrive as values."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping, Sequence

from nim_specdec_lab.tune.engines.engine import ServingEngine
from nim_specdec_lab.tune.model.acceptance import AcceptanceCurve
from nim_specdec_lab.tune.model.choice import Choice, MethodPlan
from nim_specdec_lab.tune.model.cost_model import CostModel


def best_static(
    model: CostModel, method: str, curve: AcceptanceCurve, concurrencies: Sequence[int]
) -> MethodPlan | None:
    """The method at the one K with the best mean predicted speed-up over off; None where no K beats off."""
    largest = max(concurrencies)
    off = {c: model.tokens_per_s(c, None, None, 0) for c in concurrencies}
    best: MethodPlan | None = None
    for k in range(1, curve.kmax + 1):
        predicted = {c: model.tokens_per_s(c, method, curve, k) for c in concurrencies}
        ratios = [predicted[c] / off[c] for c in concurrencies]
        plan = MethodPlan(method, (k,) * largest, predicted, sum(ratios) / len(ratios), max(ratios), min(ratios))
        if best is None or plan.score > best.score:
            best = plan
    return best if best is not None and best.score > 1.0 else None


def without_dropped_schedule(
    choice: Choice,
    serving: ServingEngine,
    model: CostModel,
    curve: AcceptanceCurve | None,
    concurrencies: Sequence[int],
) -> tuple[Choice, str | None]:
    """The choice unchanged, or (when the serving engine would drop its schedule) the chosen method's best
    static K, or off, with the one line that says why."""
    chosen = choice.chosen
    if chosen is None or serving.drop is None or curve is None or len(set(chosen.k_by_batch)) < 2:
        return choice, None  # nothing to drop: a uniform K is written without a schedule
    static = best_static(model, chosen.method, curve, concurrencies)
    instead = f"{chosen.method} at K = {static.k_by_batch[0]} at every batch size" if static else "speculation off"
    return (
        replace(choice, chosen=static),
        f"the serving engine would drop the K-per-batch-size schedule ({serving.drop.reason}); "
        f"recommending {instead} instead, the best static choice predicted",
    )


def _runner_meaning(method: str | None, measured: str, serving: str) -> str:
    if method == "ngram" and serving == "v2":
        return (
            "V2 serves ngram with its GPU proposer (the rightmost match, K drafts every step), which tune's "
            "simulator and servers did not run: acceptance and step costs will differ"
        )
    if method == "ngram" and measured == "v2":
        return "V1 serves ngram with its CPU proposer (the earliest match, drafts only on a match): acceptance differs"
    return "step costs and CUDA graph use differ between the runners: the measured figures are the other runner's"


def engine_differences(measured: Mapping[str, Any], serving: ServingEngine) -> list[str]:
    """Each way the serving engine differs from the server that measured the recommendation, in one line."""
    lines = []
    if measured["platform"] != serving.platform:
        lines.append(
            f"measured on {measured['platform']}, to serve on {serving.platform}: the tokens/s and the fitted "
            "step costs are the measuring machine's and do not carry over (the acceptance per K does, for the "
            "same model and traffic); run tune on the serving machine for its speed-ups"
        )
    if measured["vllm_version"] != serving.vllm_version:
        lines.append(
            f"measured with vLLM {measured['vllm_version']}, to serve with vLLM {serving.vllm_version}: "
            "proposers and step costs can change between versions; the figures are the measured version's"
        )
    if measured["runner"] != serving.runner:
        lines.append(
            f"measured on the {measured['runner'].upper()} model runner, to serve on "
            f"{serving.runner.upper()}: " + _runner_meaning(measured.get("method"), measured["runner"], serving.runner)
        )
    if serving.cudagraph_downgrade and measured.get("cudagraph_mode") != "PIECEWISE":
        lines.append(
            f"the serving engine runs CUDA graphs {serving.cudagraph_downgrade} to keep the schedule "
            f"(measured with {measured.get('cudagraph_mode')}): its decode steps will be slower than measured"
        )
    return lines


def measured_server(servers: Sequence[Mapping[str, Any]], method: str | None) -> Mapping[str, Any] | None:
    """The engine record of the first server that ran this method (None: speculation off)."""
    for server in servers:
        engine = server.get("engine")
        if engine is not None and engine.get("method") == method:
            return engine
    return None
