"""tune.md from tune.json's content: the variables, the decision, every configuration against off with its
interval, the tokens/s, the out-of-sample verification, the spread of the rounds, the fit."""

from __future__ import annotations

from typing import Any, Mapping

from nim_specdec_lab import stats
from nim_specdec_lab.tune.reporting.engine_report import engine_lines
from nim_specdec_lab.tune.runs.repeats import spreads_by_configuration


def _cell(value: float | None, digits: int = 1) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def speedup_cell(s: Mapping[str, Any] | None) -> str:
    """`1.520x [1.210, 1.910] faster`; a speedup of one round has no interval and no verdict."""
    if s is None:
        return "-"
    if s.get("speedup_interval") is None:
        return f"{s['speedup']:.3f}x (one round)"
    low, high = s["speedup_interval"]
    return f"{s['speedup']:.3f}x [{low:.3f}, {high:.3f}] {s['verdict']}"


def error_cell(h: Mapping[str, Any] | None) -> str:
    if h is None or h.get("error") is None:
        return "- (nothing left to fit on)"
    if h.get("error_interval") is None:
        return f"{h['error']:+.1%} (one round)"
    low, high = h["error_interval"]
    return f"{h['error']:+.1%} [{low:+.1%}, {high:+.1%}]"


def render_markdown(result: Mapping[str, Any]) -> str:
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
        lines.append("Speculation off.")
    lines += ["", result["decision"]["line"], ""]
    if result.get("answer"):
        lines += [result["answer"]["line"], ""]
    lines += _against_off(result) + _throughput(result) + _verification(result) + _spread_lines(result)
    model = result["cost_model"]
    lines += [
        "",
        "## Cost model of one engine step (fitted on round 1, where the choice was made)",
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
    lines += _expected_lines(result.get("expected_acceptance"))
    lines += [
        "",
        f"{len(result['servers'])} server starts in {result['rounds']} round(s) (each round: "
        f"{', '.join(result['lineup'])}); tune took {result['duration_s']:.0f} s.",
    ]
    if result["notes"]:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in result["notes"]]
    return "\n".join(lines) + "\n"


def _against_off(result: Mapping[str, Any]) -> list[str]:
    conc = result["concurrencies"]
    lines = [
        f"## Against speculation off ({result['rounds']} round(s), 95% intervals)",
        "",
        f"Round n pairs each configuration's n-th server with off's n-th, started in the same pass. {stats.METHOD}. "
        "A verdict is `faster` or `slower` only where the whole interval lies beyond 1 +/- the margin; a "
        "configuration whose interval lies wholly below 1 at some concurrency is never recommended. Each "
        "interval here is the configuration's own; the recommendation, picked as the largest, is shown "
        "below the table with its interval as picked among the candidates.",
        "",
        "| configuration | " + " | ".join(f"c={c}" for c in conc) + " | this traffic (own interval) |",
        "|---|" + "---|" * (len(conc) + 1),
    ]
    for row in result["configurations"]:
        if row["kind"] == "off":
            continue
        mark = " (recommended)" if row["recommended"] else ""
        cells = [speedup_cell(row["vs_off"].get(str(c))) for c in conc] + [speedup_cell(row["vs_off_on_traffic"])]
        lines.append(f"| {row['name']}{mark} | " + " | ".join(cells) + " |")
    picked = (result.get("decision") or {}).get("recommended_interval")
    if picked:
        low, high = picked["interval"]
        lines += [
            "",
            f"The recommendation on this traffic: {picked['speedup']:.3f}x, 95% interval [{low:.3f}, {high:.3f}] "
            f"as picked among {picked['candidates']} candidate(s) ({picked['method']}).",
        ]
    return lines + [""]


def _throughput(result: Mapping[str, Any]) -> list[str]:
    conc = result["concurrencies"]
    lines = [
        "## Output tokens/s per concurrency (measured / predicted)",
        "",
        "Measured: the median round over every server of the configuration, as the server sustained it "
        "(concurrency x output tokens per request / the server's own mean request latency; the client's "
        "figures are in tune.json's runs). Predicted: the cost model fitted on round 1, which made the "
        "choice; for a configuration measured in round 1 that fit saw its runs, so the two columns are not "
        "a check (the verification below is).",
        "",
        "| configuration | " + " | ".join(f"c={c}" for c in conc) + " |",
        "|---|" + "---|" * len(conc),
    ]
    for row in result["configurations"]:
        cells = []
        for c in conc:
            m, p = row["measured_tokens_per_s"].get(str(c)), row["predicted_tokens_per_s"].get(str(c))
            cells.append(f"{_cell(m)} / {_cell(p)}" if m is not None else f"- / {_cell(p)}")
        lines.append(f"| {row['name']} | " + " | ".join(cells) + " |")
    return lines + [""]


def _verification(result: Mapping[str, Any]) -> list[str]:
    rows = result["verification"]
    judged = next((v["held_out"]["prediction_of"] for v in rows if v.get("held_out")), "the model's choice")
    lines = [
        "## Verification (out of sample)",
        "",
        f"The recommendation ({rows[0]['recommended'] if rows else 'off'}) against off at each concurrency, "
        f"and the held-out prediction error of the model's choice ('{judged}'): at each concurrency, each "
        "round's cost model is fitted on that round's servers at the other concurrencies only, predicts the "
        "choice there, and meets that round's measurement (predicted / measured - 1, 95% interval over the "
        "rounds). No run at a concurrency enters the fit that predicts it; the choice itself was made by round "
        "1's fit, which saw every concurrency: out of sample for the runs, not for the choice.",
        "",
        "| c | recommended vs off | held-out prediction error |",
        "|---|---|---|",
    ]
    for v in rows:
        versus = "1 (speculation off)" if v["recommended"] == "off" else speedup_cell(v["recommended_vs_off"])
        lines.append(f"| {v['concurrency']} | {versus} | {error_cell(v['held_out'])} |")
    orders = result.get("order_by_round")
    if orders:
        lines += ["", "Order of the servers in each round (rotated from round 2 on): "]
        lines[-1] += "; ".join(f"round {r}: {', '.join(names)}" for r, names in orders.items()) + "."
    return lines


def _spread_lines(result: Mapping[str, Any]) -> list[str]:
    """How far each configuration's runs spread (largest over smallest), over all its servers and repeats:
    a ratio or a prediction error inside that band is within this machine's noise."""
    if result.get("rounds", 1) * result.get("repeat", 1) < 2:
        return []
    conc = result["concurrencies"]
    lines = [
        "",
        "## Spread of the runs (largest / smallest over every round; the median round is kept)",
        "",
        "| configuration | " + " | ".join(f"c={c}" for c in conc) + " |",
        "|---|" + "---|" * len(conc),
    ]
    for name, by_c in spreads_by_configuration(result["runs"]).items():
        lines.append(f"| {name} | " + " | ".join(_cell(by_c.get(c), 2) for c in conc) + " |")
    return lines


def _expected_lines(expected: Mapping[str, Any] | None) -> list[str]:
    """What live acceptance should be (`nim-specdec alert-rules` alerts under the interval's lower bound)."""
    if not expected or not expected.get("by_configuration"):
        return []
    lines = [
        "",
        "## Expected live acceptance length (95% prediction interval for one run; alert-rules alerts below it)",
        "",
        "| configuration | method | K | runs | mean | interval |",
        "|---|---|---|---|---|---|",
    ]
    for row in expected["by_configuration"]:
        bounds = row["acceptance_length_interval"]
        shown = "-" if bounds is None else f"{bounds[0]:.3f} to {bounds[1]:.3f}"
        lines.append(
            f"| {row['configuration']} | {row['method']} | {row['k']} | {row['runs']} | "
            f"{row['acceptance_length_mean']:.3f} | {shown} |"
        )
    return lines
