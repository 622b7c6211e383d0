"""What tune makes of its measurements once they are in: the decision on intervals, the rows of its tables,
its answer line, and the files it writes."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from nim_specdec.engines.vllm.schedule.spec_schedule import describe_schedule, validate_batch_size_schedule
from nim_specdec.files.output_files import write_atomically
from nim_specdec_lab import stats
from nim_specdec_lab.tune.deciding.answer import answer, trace_level
from nim_specdec_lab.tune.deciding.decide import Decision, Option, decide
from nim_specdec_lab.tune.deciding.verification import HeldOut, verification_rows
from nim_specdec_lab.tune.lineup import candidates as cand
from nim_specdec_lab.tune.model.acceptance import AcceptanceCurve
from nim_specdec_lab.tune.model.choice import Choice, static_prediction
from nim_specdec_lab.tune.model.cost_model import CostModel
from nim_specdec_lab.tune.reporting.expected_acceptance import expected_acceptance
from nim_specdec_lab.tune.reporting.plots import write_plots
from nim_specdec_lab.tune.reporting.report import CHOICE_KIND, OFF, STATIC, ConfigRow, build_result
from nim_specdec_lab.tune.reporting.report_md import render_markdown
from nim_specdec_lab.tune.runs.measurement import MeasureOptions, Say, judged_tokens_per_s
from nim_specdec_lab.tune.runs.rounds import Table

CHOICE = "model-choice"  # the servers of the model's choice, where it is no configuration already measured
Lineup = Sequence[tuple[str, Mapping[str, Any] | None]]


def lineup_name(candidate: cand.Candidate) -> str:
    """A candidate's servers at its largest K (a draft model's K = 0 server is `METHOD-k0`)."""
    return f"{candidate.method}-k{candidate.kmax}"


def decided(
    captured: Sequence[Any],
    table: Table,
    lineup: Lineup,
    choice_name: str,
    configured: cand.Candidate | None,
    concurrencies: Sequence[int],
    margin: float,
) -> tuple[Decision, float | None]:
    """The decision on every speculating configuration of the lineup, weighted by the capture's traffic."""
    weights, level = traffic_weights(captured, table, concurrencies)
    current = lineup_name(configured) if configured is not None else None
    options = [
        Option(name, config, table.figures(name), proposal=name == choice_name, current=name == current)
        for name, config in lineup
        if config is not None
    ]
    return decide(table.figures("off"), options, weights, margin), level


def traffic_weights(
    captured: Sequence[Any], table: Table, concurrencies: Sequence[int]
) -> tuple[dict[int, float], float | None]:
    """Each concurrency's weight on the capture's traffic, and its level (requests in flight, by Little's law
    from its timestamps and off's request latency at the lowest concurrency)."""
    lowest = min(concurrencies)
    latencies = [
        e.run.server_means.get("latency_mean_s") or e.run.latency_s.get("p50")
        for e in table.entries
        if e.configuration == "off" and e.concurrency == lowest
    ]
    level = trace_level([c.timestamp_ms for c in captured], [t for t in latencies if t])
    return stats.concurrency_weights(level, concurrencies), level


def chosen_entry(config: Mapping[str, Any] | None, score: float | None, name: str) -> dict[str, Any] | None:
    if config is None:
        return None
    ranges = config.get("num_speculative_tokens_per_batch_size") or [[1, 1, config["num_speculative_tokens"]]]
    return {
        "configuration": name,
        "method": config["method"],
        "speculative_config": dict(config),
        "schedule": [asdict(row) for row in describe_schedule(validate_batch_size_schedule(ranges, None, "schedule"))],
        "predicted_speedup_mean": None if score is None else round(score, 3),
    }


def predicted_grid(model_fit, method: str, curve: AcceptanceCurve, largest: int) -> dict[str, dict[str, float]]:
    """Predicted tokens/s for every K at every batch size up to the largest concurrency."""
    return {
        str(k): {str(b): round(model_fit.tokens_per_s(b, method, curve, k), 2) for b in range(1, largest + 1)}
        for k in range(curve.kmax + 1)
    }


def _predicted(
    config: Mapping[str, Any] | None,
    name: str,
    choice_name: str,
    choice: Choice,
    model_fit: CostModel,
    curves: Mapping[str, AcceptanceCurve],
    concurrencies: Sequence[int],
) -> dict[int, float]:
    if config is None:
        return dict(choice.predicted_off)
    if name == choice_name and choice.chosen is not None:
        return dict(choice.chosen.predicted)
    method = str(config["method"])
    if method not in curves:
        return {}
    return static_prediction(model_fit, method, curves[method], int(config["num_speculative_tokens"]), concurrencies)


@dataclass(frozen=True)
class FittedChoice:
    """The cost model fitted on round 1 and what it chose: the choice, its config as the serving engine will take
    it, the configuration of the lineup that serves it, and the line said where that engine would drop its
    schedule."""

    model_fit: CostModel
    curves: Mapping[str, AcceptanceCurve]
    by_method: Mapping[str, cand.Candidate]
    choice: Choice
    config: Mapping[str, Any] | None
    name: str = CHOICE
    fallback: str | None = None


@dataclass(frozen=True)
class Verdict:
    """The decision on the paired rounds, the traffic's level it was weighted at, and the held-out check."""

    decision: Decision
    level: float | None
    held: Mapping[int, HeldOut]
    margin: float


@dataclass(frozen=True)
class Measured:
    """What the servers measured and how: every run, the lineup in the order served, each server's start."""

    table: Table
    lineup: Lineup
    servers: Sequence[Mapping[str, Any]]
    run: MeasureOptions


@dataclass(frozen=True)
class Serving:
    """The recommendation as it will serve: its variables and what tune knows of the engine that serves it."""

    env: Mapping[str, str]
    engine: Mapping[str, Any] | None


def result_files(
    verdict: Verdict, fit: FittedChoice, measured: Measured, serving: Serving, notes: Sequence[str], duration_s: float
) -> dict[str, Any]:
    decision, level, held, margin = verdict.decision, verdict.level, verdict.held, verdict.margin
    table, lineup, run = measured.table, measured.lineup, measured.run
    choice, choice_name, model_fit, curves = fit.choice, fit.name, fit.model_fit, fit.curves
    conc = run.concurrencies
    recommended = "off" if decision.recommended is None else decision.recommended.name
    rows = []
    for name, config in lineup:
        compared = decision.comparison(name)
        rows.append(
            ConfigRow(
                name,
                OFF if config is None else CHOICE_KIND if name == choice_name else STATIC,
                config,
                _predicted(config, name, choice_name, choice, model_fit, curves, conc),
                {c: judged_tokens_per_s(r) for c, r in table.kept(name).items()},
                {} if compared is None else {c: None if s is None else s.to_json() for c, s in compared.by_c.items()},
                None if compared is None or compared.traffic is None else compared.traffic.to_json(),
                name == recommended,
            )
        )
    final = None if decision.recommended is None else decision.recommended.config
    score = choice.chosen.score if choice.chosen is not None and recommended == choice_name else None
    off = table.figures("off")
    result = build_result(
        recommended_env=serving.env,
        chosen=chosen_entry(final, score, recommended),
        decision={
            "recommended": recommended,
            "model_choice": choice_name,
            "cannot_tell": decision.cannot_tell,
            "margin": margin,
            "method": stats.METHOD,
            "line": decision.line,
            "recommended_interval": decision.picked_json(),
        },
        rows=rows,
        concurrencies=conc,
        verification=verification_rows(decision, held, conc),
        cost_model=model_fit.to_json(),
        acceptance={m: c.to_json() for m, c in curves.items()},
        methods=[
            {
                "method": p.method,
                "score": round(p.score, 4),
                "k_by_batch_size": list(p.k_by_batch),
                "predicted_by_k": predicted_grid(model_fit, p.method, curves[p.method], max(conc)),
            }
            for p in choice.plans
        ],
        servers=measured.servers,
        lineup=[name for name, _ in lineup],
        runs=table.to_json(),
        rounds=run.rounds,
        repeat=run.repeat,
        notes=notes,
        duration_s=duration_s,
        engine=serving.engine,
        answer=answer(
            off, None if final is None else table.figures(recommended), level, margin, len(decision.comparisons)
        ),
    )
    # Beside the recommendation: where live acceptance should land (what `nim-specdec alert-rules` alerts on).
    result["expected_acceptance"] = expected_acceptance(result)
    return result


def write_result(out: Path, result: Mapping[str, Any], say: Say) -> None:
    write_atomically(str(out / "tune.json"), json.dumps(result, indent=2, allow_nan=False) + "\n", "--out")
    write_atomically(str(out / "tune.md"), render_markdown(result), "--out")
    plots = write_plots(result, out)
    say(f"tune: wrote {out / 'tune.json'}, {out / 'tune.md'}" + "".join(f", {p}" for p in plots))
