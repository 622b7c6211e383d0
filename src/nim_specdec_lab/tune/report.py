"""tune.json and tune.md from plain data: configurations with predicted and measured tokens/s, the
recommendation and its check against the best measured alternative at every concurrency."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from nim_specdec_lab.tune.engine_report import engine_lines
from nim_specdec_lab.tune.repeats import spreads_by_configuration

OFF, STATIC, RECOMMENDED = "off", "static", "recommended"
NOT_KEPT = "predicted choice (not kept)"  # the model's choice, when verification recommended another row


@dataclass(frozen=True)
class ConfigRow:
    name: str  # "off", "ngram K=3", "recommended"
    kind: str  # OFF, STATIC or RECOMMENDED
    config: Mapping[str, Any] | None  # the speculative_config served (None: off)
    predicted: Mapping[int, float] = field(default_factory=dict)  # concurrency -> tokens/s
    measured: Mapping[int, float] = field(default_factory=dict)  # empty when it was only predicted


def worst_ratio(row: ConfigRow, rows: Sequence[ConfigRow], concurrencies: Sequence[int]) -> float:
    """The row's lowest measured tokens/s relative to the best measured row, over the concurrencies."""
    ratios = []
    for c in concurrencies:
        best = max((r.measured[c] for r in rows if c in r.measured), default=0.0)
        ratios.append(row.measured.get(c, 0.0) / best if best else 0.0)
    return min(ratios) if ratios else 0.0


def keep_or_fall_back(rows: Sequence[ConfigRow], concurrencies: Sequence[int]) -> ConfigRow:
    """The measured row to recommend: the verified recommendation unless another measured configuration
    (off or a static candidate) keeps closer to the best at every concurrency. The prediction chose the
    recommendation; the measurements have the last word, so what tune recommends never measured worse
    than something it could have recommended instead. Ties keep the recommendation, then off."""
    measured = [r for r in rows if r.measured]
    order = {RECOMMENDED: 0, OFF: 1, STATIC: 2}
    return max(measured, key=lambda r: (round(worst_ratio(r, measured, concurrencies), 6), -order[r.kind]))


def verification(rows: Sequence[ConfigRow], concurrencies: Sequence[int]) -> list[dict[str, Any]]:
    """Per concurrency: the recommendation measured, the best measured alternative (off or a static
    candidate), their ratio, and how far the model's own choice was predicted from its measurement. That
    is the recommendation unless verification replaced it: a configuration tune measured before choosing
    is fitted on that very measurement, so its "prediction" would match by construction."""
    rec = next((r for r in rows if r.kind == RECOMMENDED), None)
    choice = next((r for r in rows if r.name == NOT_KEPT), rec)
    out = []
    for c in concurrencies:
        others = [(r.measured[c], r.name) for r in rows if r.kind != RECOMMENDED and c in r.measured]
        best, best_name = max(others) if others else (None, None)
        measured = rec.measured.get(c) if rec else None
        predicted = rec.predicted.get(c) if rec else None
        choice_measured = choice.measured.get(c) if choice else None
        choice_predicted = choice.predicted.get(c) if choice else None
        out.append(
            {
                "concurrency": c,
                "recommended_measured": measured,
                "recommended_predicted": predicted,
                "best_alternative": best_name,
                "best_alternative_measured": best,
                "ratio_to_best": measured / best if measured and best else None,
                "prediction_of": None if choice is None else choice.name,
                "prediction_error": (
                    (choice_predicted - choice_measured) / choice_measured
                    if choice_measured and choice_predicted
                    else None
                ),
            }
        )
    return out


def _by_c(values: Mapping[int, float]) -> dict[str, float]:
    return {str(c): round(v, 2) for c, v in sorted(values.items())}


def build_result(
    *,
    recommended_env: Mapping[str, str],
    chosen: Mapping[str, Any] | None,
    rows: Sequence[ConfigRow],
    concurrencies: Sequence[int],
    cost_model: Mapping[str, Any],
    acceptance: Mapping[str, Any],
    methods: Sequence[Mapping[str, Any]],
    servers: Sequence[Mapping[str, Any]],
    runs: Sequence[Mapping[str, Any]],
    notes: Sequence[str],
    duration_s: float,
    repeat: int = 1,
    servers_per_configuration: int = 1,
    engine: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "recommended": dict(recommended_env),
        "engine": None if engine is None else dict(engine),
        "recommendation": chosen,
        "concurrencies": list(concurrencies),
        "configurations": [
            {
                "name": r.name,
                "kind": r.kind,
                "speculative_config": None if r.config is None else dict(r.config),
                "predicted_tokens_per_s": _by_c(r.predicted),
                "measured_tokens_per_s": _by_c(r.measured),
            }
            for r in rows
        ],
        "verification": verification(rows, concurrencies),
        "cost_model": dict(cost_model),
        "acceptance": dict(acceptance),
        "methods": list(methods),
        "servers": list(servers),
        "repeat": repeat,
        "servers_per_configuration": servers_per_configuration,
        "runs": list(runs),
        "notes": list(notes),
        "duration_s": round(duration_s, 1),
    }


def _cell(value: float | None, digits: int = 1) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def render_markdown(result: Mapping[str, Any]) -> str:
    conc = result["concurrencies"]
    lines = ["# nim-specdec tune", ""] + engine_lines(result) + ["## Recommended variables", ""]
    lines += ["```"] + [f"{k}={v}" for k, v in result["recommended"].items()] + ["```", ""]
    chosen = result["recommendation"]
    if chosen:
        lines.append(
            f"Method `{chosen['method']}`; K per batch size: "
            + ", ".join(f"{r['batch_sizes']}: K={r['k']}" for r in chosen["schedule"])
            + "."
        )
    else:
        lines.append("Speculation off: no candidate was predicted to gain enough over the concurrencies swept.")
    lines += [
        "",
        "## Output tokens/s per concurrency (measured / predicted)",
        "",
        "Measured: what the server sustained with that many requests in flight (concurrency x output tokens "
        "per request / the server's own mean request latency); the client's figures are in tune.json's "
        "runs.",
        "",
    ]
    lines.append("| configuration | " + " | ".join(f"c={c}" for c in conc) + " |")
    lines.append("|---|" + "---|" * len(conc))
    for row in result["configurations"]:
        cells = []
        for c in conc:
            m, p = row["measured_tokens_per_s"].get(str(c)), row["predicted_tokens_per_s"].get(str(c))
            cells.append(f"{_cell(m)} / {_cell(p)}" if m is not None else f"- / {_cell(p)}")
        lines.append(f"| {row['name']} | " + " | ".join(cells) + " |")
    judged = next((v["prediction_of"] for v in result["verification"] if v.get("prediction_of")), "recommended")
    lines += [
        "",
        "## Verification",
        "",
        f"Prediction error: of the model's own choice ('{judged}').",
        "",
        "| c | recommended | best alternative | ratio | prediction error |",
        "|---|---|---|---|---|",
    ]
    for v in result["verification"]:
        error = v["prediction_error"]
        lines.append(
            f"| {v['concurrency']} | {_cell(v['recommended_measured'])} | {v['best_alternative']} "
            f"{_cell(v['best_alternative_measured'])} | {_cell(v['ratio_to_best'], 3)} | "
            f"{'' if error is None else f'{error:+.1%}'} |"
        )
    lines += _spread_lines(result)
    model = result["cost_model"]
    lines += [
        "",
        "## Cost model of one engine step",
        "",
        f"`{model['formula']}`",
        "",
        f"- base_s = {model['base_s'] * 1e3:.3f} ms, per_seq_s = {model['per_seq_s'] * 1e3:.3f} ms",
    ]
    for name, cost in model["methods"].items():
        lines.append(
            f"- {name}: per_step_s = {cost.get('per_step_s', 0.0) * 1e3:.3f} ms, "
            f"per_k_s = {cost['per_k_s'] * 1e3:.3f} ms, "
            f"per_draft_token_s = {cost['per_draft_token_s'] * 1e3:.3f} ms"
        )
    lines += ["", "## Acceptance (tokens per request per engine step, by K)", ""]
    for name, curve in result["acceptance"].items():
        runner = f", {curve['model_runner'].upper()} model runner" if curve.get("model_runner") else ""
        lines.append(
            f"- {name} ({curve['source']}{runner}): "
            + ", ".join(f"K={p['k']}: {p['tokens_per_slot']:.3f}" for p in curve["by_k"])
        )
    lines += ["", f"{len(result['servers'])} server starts; tune took {result['duration_s']:.0f} s."]
    if result["notes"]:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in result["notes"]]
    return "\n".join(lines) + "\n"


def _spread_lines(result: Mapping[str, Any]) -> list[str]:
    """How far each server's rounds spread (largest over smallest), when tune measured more than one round:
    a prediction error or a ratio inside that band is within this machine's noise."""
    repeat, servers = result.get("repeat", 1), result.get("servers_per_configuration", 1)
    if repeat * servers < 2:
        return []
    conc = result["concurrencies"]
    where = f"{repeat} round{'s' if repeat > 1 else ''}" + (f" on each of {servers} servers" if servers > 1 else "")
    lines = [
        "",
        f"## Spread over {where} (largest / smallest; the median round is kept)",
        "",
        "| configuration | " + " | ".join(f"c={c}" for c in conc) + " |",
        "|---|" + "---|" * len(conc),
    ]
    for name, by_c in spreads_by_configuration(result["runs"]).items():
        lines.append(f"| {name} | " + " | ".join(_cell(by_c.get(c), 2) for c in conc) + " |")
    return lines
