"""What tune makes of its measurements once they are in: the rows of its tables, the recommendation's last word,
its answer line, and the files it writes."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from nim_specdec.common.output_files import write_atomically
from nim_specdec_lab.tune import candidates as cand
from nim_specdec_lab.tune.acceptance import AcceptanceCurve
from nim_specdec_lab.tune.answer import answer, trace_level
from nim_specdec_lab.tune.choice import static_prediction
from nim_specdec_lab.tune.report import (
    NOT_KEPT,
    OFF,
    RECOMMENDED,
    STATIC,
    ConfigRow,
    keep_or_fall_back,
    render_markdown,
    worst_ratio,
)
from nim_specdec_lab.tune.runner import (
    Round,
    Say,
    judged_tokens_per_s,
)


def server_names(candidate: cand.Candidate) -> tuple[str, str]:
    """The names of a candidate's servers: at its largest K, and (a draft model's) at K = 0."""
    return f"{candidate.method}-k{candidate.kmax}", f"{candidate.method}-k0"


def pool_of(
    config: Mapping[str, Any] | None, candidates: Sequence[cand.Candidate], pooled: Mapping[str, Any]
) -> str | None:
    """The servers whose rounds measured the final recommendation; None: it is speculation off."""
    if config is None:
        return None
    for candidate in candidates:
        if dict(candidate.config) == dict(config):
            return server_names(candidate)[0]
    return "recommended" if "recommended" in pooled else None


def final_answer(
    captured: Sequence[Any], pooled: Mapping[str, Mapping[int, Sequence[Round]]], name: str | None, margin: float
) -> dict[str, Any]:
    tps = lambda rounds: {c: [judged_tokens_per_s(r.run) for r in found] for c, found in rounds.items()}  # noqa: E731
    off = pooled["off"]
    lowest = min(off)
    latencies = [r.run.server_means.get("latency_mean_s") or r.run.latency_s.get("p50") for r in off[lowest]]
    level = trace_level([c.timestamp_ms for c in captured], [t for t in latencies if t])
    return answer(tps(off), None if name is None else tps(pooled[name]), level, margin)


def last_word(rows: list[ConfigRow], concurrencies: Sequence[int], notes: list[str]) -> tuple[list[ConfigRow], Any]:
    """The verified recommendation, or the measured configuration that kept closer to the best everywhere."""
    kept = keep_or_fall_back(rows, concurrencies)
    if kept.kind == RECOMMENDED:
        return rows, kept.config
    verified = next(r for r in rows if r.kind == RECOMMENDED)
    notes.append(
        f"verification: the predicted choice measured {worst_ratio(verified, rows, concurrencies):.2f}x the best "
        f"at its worst concurrency; '{kept.name}' kept {worst_ratio(kept, rows, concurrencies):.2f}x and is "
        "recommended instead"
    )
    rows = [replace(r, name=NOT_KEPT, kind=STATIC) if r.kind == RECOMMENDED else r for r in rows]
    return rows + [ConfigRow("recommended", RECOMMENDED, kept.config, kept.predicted, kept.measured)], kept.config


def chosen_entry(config: Mapping[str, Any] | None, score: float | None) -> dict[str, Any] | None:
    if config is None:
        return None
    from nim_specdec.config.spec_schedule import describe_schedule, validate_batch_size_schedule  # noqa: PLC0415

    ranges = config.get("num_speculative_tokens_per_batch_size") or [[1, 1, config["num_speculative_tokens"]]]
    return {
        "method": config["method"],
        "speculative_config": dict(config),
        "schedule": [asdict(row) for row in describe_schedule(validate_batch_size_schedule(ranges, None, "schedule"))],
        "predicted_speedup_mean": None if score is None else round(score, 3),
    }


def already_measured(config: Mapping[str, Any] | None, candidates: Sequence[cand.Candidate]) -> str | None:
    if config is None:
        return "off"
    for candidate in candidates:
        if dict(candidate.config) == dict(config):
            return candidate.method
    return None


def predicted_grid(model_fit, method: str, curve: AcceptanceCurve, largest: int) -> dict[str, dict[str, float]]:
    """Predicted tokens/s for every K at every batch size up to the largest concurrency."""
    return {
        str(k): {str(b): round(model_fit.tokens_per_s(b, method, curve, k), 2) for b in range(1, largest + 1)}
        for k in range(curve.kmax + 1)
    }


def config_rows(
    candidates, by_method, curves, model_fit, choice, measured, concurrencies, rec_config
) -> list[ConfigRow]:
    tps = lambda runs: {c: judged_tokens_per_s(r) for c, r in runs.items()}  # noqa: E731
    rows = [ConfigRow("off", OFF, None, dict(choice.predicted_off), tps(measured["off"]))]
    for candidate in candidates:
        predicted = {}
        if candidate.method in by_method:
            predicted = static_prediction(
                model_fit, candidate.method, curves[candidate.method], candidate.kmax, concurrencies
            )
        rows.append(
            ConfigRow(
                f"{candidate.method} K={candidate.kmax}",
                STATIC,
                candidate.config,
                predicted,
                tps(measured[candidate.method]),
            )
        )
    predicted = dict(choice.chosen.predicted) if choice.chosen else dict(choice.predicted_off)
    rows.append(ConfigRow("recommended", RECOMMENDED, rec_config, predicted, tps(measured["recommended"])))
    return rows


def write_result(out: Path, result: Mapping[str, Any], say: Say) -> None:
    from nim_specdec_lab.tune.plots import write_plots  # noqa: PLC0415

    write_atomically(str(out / "tune.json"), json.dumps(result, indent=2) + "\n", "--out")
    write_atomically(str(out / "tune.md"), render_markdown(result), "--out")
    plots = write_plots(result, out)
    say(f"tune: wrote {out / 'tune.json'}, {out / 'tune.md'}" + "".join(f", {p}" for p in plots))
