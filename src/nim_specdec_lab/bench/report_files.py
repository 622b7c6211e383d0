"""bench's report rebuilt from what its runs left under --out, for either flow (bench --serve's paired rounds, or
one run per side against servers started elsewhere), and written: report.json, report.md and the plots."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nim_specdec.errors import ConfigError
from nim_specdec.files.output_files import write_atomically
from nim_specdec.files.regular_file import read_json_inside
from nim_specdec_lab.bench import acceptance_matrix
from nim_specdec_lab.bench.compare import MODES, compare
from nim_specdec_lab.bench.plots import write_plots
from nim_specdec_lab.bench.report_md import markdown
from nim_specdec_lab.bench.serve_report import IGNORE_EOS, RoundRun, capture_in_flight, serve_report
from nim_specdec_lab.replay import checked
from nim_specdec_lab.replay.measure import MAX_RUN_JSON_BYTES, MEASUREMENT_JSON, read_measurement
from nim_specdec_lab.replay.spec import ReplayMeasurement
from nim_specdec_lab.replay.trace_notes import trace_notes
from nim_specdec_lab.stats import DEFAULT_MARGIN

CONTEXT_JSON = "bench_serve.json"  # what bench --serve's report needs besides the measurements
NO_INTERVAL = "one run per side: no interval (bench --serve measures paired rounds)"


def build_report(out: Path) -> Path:
    """Rebuild report.md, report.json and the plots from every finished run under OUT/runs."""
    if has_rounds(out):
        return build_serve_report(out)

    found: dict[str, dict[str, ReplayMeasurement]] = {mode: {} for mode in MODES}
    for mode in MODES:
        for path in sorted((out / "runs" / mode).glob(f"*/{MEASUREMENT_JSON}")):
            found[mode][path.parent.name] = read_measurement(path, out)
    if not any(found.values()):
        raise ConfigError("--out", f"no finished runs under {out / 'runs'}", "run bench with --url and --mode first")
    report = compare(found)
    for row in report["rows"]:
        note = NO_INTERVAL if row["speedup"] is not None else None
        row.update(speedup_interval=None, verdict=None, verdict_note=note)
    report["acceptance_matrix"], notes = acceptance_matrix.from_runs({m: list(found[m].values()) for m in MODES})
    report["warnings"] += notes
    ignore_eos = [m for runs in found.values() for m in runs.values() if m.sampling.get("ignore_eos")]
    if ignore_eos:
        report["warnings"].append(IGNORE_EOS)
    write_report(report, out)
    return out / "report.md"


def has_rounds(out: Path) -> bool:
    return (out / "serve" / CONTEXT_JSON).is_file()


def _runs(out: Path) -> list[Any]:

    found = []
    for path in sorted((out / "serve").glob(f"r*/*/c*/*/{MEASUREMENT_JSON}")):
        category_dir = path.parent
        c_dir, side_dir, round_dir = category_dir.parent, category_dir.parent.parent, category_dir.parent.parent.parent
        run = read_measurement(path, out)
        try:
            found.append(RoundRun(int(round_dir.name[1:]), side_dir.name, int(c_dir.name[1:]), category_dir.name, run))
        except ValueError:
            raise ConfigError("--out", f"{path} is not under a bench round's folders", "remove it") from None
    return found


# The context's fields the report reads, and the JSON type each must have (the file may have been edited).
_CONTEXT_FIELDS = {
    "timestamps_ms": dict,
    "requests": dict,
    "greedy": bool,
    "baseline_off": bool,
    "ignore_eos": bool,
}


def _context_problem(context: Any) -> str | None:
    """Which field of the serve context is missing or of the wrong type (never its value), or None."""
    if not isinstance(context, dict):
        return "not a JSON object"
    for key, kind in _CONTEXT_FIELDS.items():
        value = context.get(key)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            return f"{key} is missing or not a JSON {kind.__name__}"
    tokens = context.get("max_tokens")
    if tokens is not None and (not isinstance(tokens, int) or isinstance(tokens, bool)):
        return "max_tokens is not a JSON integer or null"
    if not all(isinstance(v, list) for v in context["requests"].values()) or not all(
        v is None or isinstance(v, list) for v in context["timestamps_ms"].values()
    ):
        return "timestamps_ms or requests holds something other than lists"
    return None


def _check_numbers(context: Any, path: Path) -> None:
    """The numbers the report computes with: the margin in [0, 1) and the capture's timestamps finite and
    in range (replay.checked), or one line naming the file."""
    try:
        if not isinstance(context, dict) or not isinstance(context.get("timestamps_ms"), dict):
            raise ValueError("no timestamps_ms object")
        if context.get("margin") is not None:
            checked.number(context["margin"], "margin", 0.999)
        for category, stamps in context["timestamps_ms"].items():
            for stamp in stamps or ():
                checked.number(stamp, f"timestamps_ms.{category}", 1e15)
    except (ValueError, TypeError) as err:
        raise ConfigError("--out", f"{path} is not bench's context ({err})", "run bench --serve again") from None


def build_serve_report(out: Path) -> Path:

    path = out / "serve" / CONTEXT_JSON
    context = read_json_inside(path, out, MAX_RUN_JSON_BYTES, ConfigError, "--out", fix="run bench --serve again")
    problem = _context_problem(context)
    if problem:
        raise ConfigError("--out", f"{path} is not bench --serve's context ({problem})", "run bench --serve again")
    _check_numbers(context, path)
    runs = _runs(out)
    if not runs:
        raise ConfigError("--out", f"no finished rounds under {out / 'serve'}", "run bench --serve again")
    levels = {c: capture_in_flight(stamps, runs, c) for c, stamps in context["timestamps_ms"].items()}
    notes = {
        c: trace_notes(
            requests,
            context["greedy"],
            context["max_tokens"],
            context["max_model_len"],
            (context.get("prompt_tokens") or {}).get(c),
        )
        for c, requests in context["requests"].items()
    }
    margin = DEFAULT_MARGIN if context.get("margin") is None else context["margin"]
    report = serve_report(runs, margin, context["baseline_off"], levels, notes, context["ignore_eos"])
    report["serve"] = {
        k: context.get(k)
        for k in ("rounds", "order_by_round", "servers", "seconds", "per_request_spec_decode_metrics", "sides")
    }
    write_report(report, out)
    return out / "report.md"


def write_report(report: dict, out: Path) -> None:
    write_atomically(str(out / "report.json"), json.dumps(report, indent=2, allow_nan=False) + "\n", "--out")
    write_atomically(str(out / "report.md"), markdown(report), "--out")
    write_plots(report, out)
