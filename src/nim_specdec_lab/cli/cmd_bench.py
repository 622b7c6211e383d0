"""bench: measure speculative decoding on vs off over the same traffic, with AIPerf.

Run it once against the server with speculation off (`--mode off`) and once against the same model with
speculation on (`--mode on`), into the same `--out` directory; one server at a time is enough. Each run
keeps its artifacts under OUT/runs/MODE/CATEGORY and rebuilds the comparison: OUT/report.md,
OUT/report.json and three PNG plots.

By default the requests run as a closed loop (`--concurrency` in flight, the next sent as soon as one
finishes), so that output tokens/s measures the server. `--schedule timestamps` replays a capture at its
recorded arrival times instead; throughput then reflects the arrival rate, and the report says so.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from nim_specdec.common.regular_file import read_regular
from nim_specdec.errors import ConfigError, UnreachableError

EXTRA = "--extra"
# A prompts file: one prompt a line.
MAX_PROMPTS_BYTES = 256 * 1024 * 1024


def rewrite_argv(argv: Sequence[str]) -> list[str]:
    """`--extra --flag` as `--extra=--flag`: argparse refuses a value that starts with a dash."""
    out, i = [], 0
    argv = list(argv)
    while i < len(argv):
        if argv[i] == EXTRA and i + 1 < len(argv):
            out.append(f"{EXTRA}={argv[i + 1]}")
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from nim_specdec_lab.specbench.inputs import SPEED_BENCH_CATEGORIES

    parser.add_argument("--url", help="base URL of the server under test, e.g. http://localhost:8000")
    parser.add_argument("--mode", choices=("on", "off"), help="whether that server speculates")
    data = parser.add_mutually_exclusive_group()
    data.add_argument("--trace", help="mooncake_payload capture to replay (category: the file's stem)")
    data.add_argument("--speed-bench", help="directory prepared by SPEED-Bench's prepare.py (qualitative.jsonl)")
    parser.add_argument("--categories", default=",".join(SPEED_BENCH_CATEGORIES), help="SPEED-Bench categories (comma-separated)")
    parser.add_argument("--schedule", choices=("closed", "timestamps"), default="closed",
                        help="closed: --concurrency requests in flight (default); timestamps: at the capture's arrival times")
    parser.add_argument("--concurrency", type=int, default=1, help="requests in flight in the closed loop (default 1)")
    parser.add_argument("--request-count", type=int, help="requests to send in the closed loop (default: each request once)")
    parser.add_argument("--max-tokens", type=int, help="set max_tokens in every request (default: each request's own)")
    parser.add_argument("--greedy", action="store_true", help="send every request with temperature 0")
    parser.add_argument("--ignore-eos", action="store_true", help="generate up to max_tokens whatever the model emits")
    parser.add_argument("--warmup", type=int, default=1, help="unmeasured requests sent first (default 1)")
    parser.add_argument("--model", help="served model name (default: the server's first model)")
    parser.add_argument("--tokenizer", help="tokenizer AIPerf loads (token counts come from the server): a local directory, or "
                        "'builtin' (tiktoken, fetched from the network on first use); default: the served model's "
                        "directory when it is on this machine, else builtin")
    parser.add_argument("--metrics-path", default="/metrics", help="the server's Prometheus path (default /metrics; NIM: /v1/metrics)")
    parser.add_argument("--aiperf", help="the aiperf executable (default: $AIPERF_BIN, ./.venv-aiperf/bin/aiperf, aiperf on PATH)")
    parser.add_argument(EXTRA, action="append", default=[], metavar="ARG",
                        help="one more argument for aiperf profile (repeatable; --extra=--flag or --extra --flag)")
    parser.add_argument("--out", default="specbench", help="output directory (default ./specbench)")
    parser.add_argument("--report-only", action="store_true", help="only rebuild the report from OUT")


def _read_lines(path: Path, option: str, fix: str) -> list[str]:
    try:
        return read_regular(path, MAX_PROMPTS_BYTES).decode("utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(option, f"cannot read {path} ({getattr(err, 'strerror', None) or err})", fix) from None


def _workloads(args: argparse.Namespace):
    from nim_specdec_lab.specbench.inputs import SPEED_BENCH_CATEGORIES, from_capture, from_speed_bench

    if args.trace:
        path = Path(args.trace)
        return [from_capture(path.stem, _read_lines(path, "--trace", "check the path"))]
    if args.speed_bench:
        source = Path(args.speed_bench) / "qualitative.jsonl"
        if not source.is_file():
            raise ConfigError("--speed-bench", f"{source} does not exist", "run SPEED-Bench's prepare.py --output_dir DIR first")
        categories = [c.strip() for c in args.categories.split(",") if c.strip()]
        unknown = sorted(set(categories) - set(SPEED_BENCH_CATEGORIES))
        if unknown or not categories:
            raise ConfigError("--categories", f"unknown categories {unknown}", f"choose from {', '.join(SPEED_BENCH_CATEGORIES)}")
        lines = _read_lines(source, "--speed-bench", "run SPEED-Bench's prepare.py again")
        return [from_speed_bench(c, lines) for c in categories]
    raise ConfigError("bench", "needs --trace or --speed-bench", "see nim-specdec bench --help")


def _tokenizer(url: str) -> str:
    """The served model's own directory (vLLM's /v1/models `root`) when it is on this machine: AIPerf
    needs a tokenizer to start, and its builtin one is downloaded on first use."""
    from nim_specdec.errors import LauncherError
    from nim_specdec_lab.ngram.replay import http_json

    try:
        root = http_json(url.rstrip("/") + "/v1/models", timeout=30)["data"][0].get("root")
    except (LauncherError, KeyError, IndexError, TypeError, AttributeError):
        return "builtin"
    return root if isinstance(root, str) and (Path(root) / "tokenizer_config.json").is_file() else "builtin"


def _say(line: str) -> None:
    print(f"nim-specdec bench: {line}", file=sys.stderr, flush=True)


def _measure(args: argparse.Namespace, out: Path) -> None:
    from nim_specdec_lab.ngram.replay import server_model
    from nim_specdec_lab.replay import ReplaySpec, run_replay
    from nim_specdec_lab.replay.aiperf_run import find_aiperf

    workloads = _workloads(args)
    aiperf = find_aiperf(args.aiperf)  # before anything is sent
    if args.schedule == "timestamps":
        missing = [w.category for w in workloads if w.timestamps_ms is None]
        if missing:
            raise ConfigError("--schedule", f"timestamps needs a capture with a timestamp on every line ({', '.join(missing)} has none)",
                              "use --schedule closed")
        if args.request_count is not None:
            raise ConfigError("--request-count", "only the closed loop cycles the requests", "drop it with --schedule timestamps")
    model = args.model or server_model(args.url)[0]
    tokenizer = args.tokenizer or _tokenizer(args.url)
    for number, workload in enumerate(workloads, start=1):
        _say(f"[{number}/{len(workloads)}] {workload.category}, speculation {args.mode}: {len(workload.requests)} requests"
             + (f" ({workload.note})" if workload.note else ""))
        spec = ReplaySpec(
            url=args.url, model=model, requests=workload.requests, concurrency=args.concurrency, schedule=args.schedule,
            timestamps_ms=workload.timestamps_ms, request_count=args.request_count, greedy=args.greedy,
            max_tokens=args.max_tokens, ignore_eos=args.ignore_eos, tokenizer=tokenizer, metrics_path=args.metrics_path,
            warmup=args.warmup, aiperf_extra=tuple(args.extra),
        )
        run_replay(spec, out / "runs" / args.mode / workload.category, Path(aiperf), _say)


def build_report(out: Path) -> Path:
    """Rebuild report.md, report.json and the plots from every finished run under OUT/runs."""
    from nim_specdec.common.output_files import write_atomically
    from nim_specdec_lab.replay.measure import MEASUREMENT_JSON
    from nim_specdec_lab.replay.spec import ReplayMeasurement
    from nim_specdec_lab.specbench.compare import MODES, compare
    from nim_specdec_lab.specbench.plots import write_plots
    from nim_specdec_lab.specbench.report_md import markdown

    found: dict[str, dict[str, ReplayMeasurement]] = {mode: {} for mode in MODES}
    for mode in MODES:
        for path in sorted((out / "runs" / mode).glob(f"*/{MEASUREMENT_JSON}")):
            try:
                found[mode][path.parent.name] = ReplayMeasurement.from_json(json.loads(path.read_text()))
            except (OSError, ValueError, KeyError, TypeError) as err:
                raise ConfigError("--out", f"{path} is not a bench measurement ({err})", "remove it or run bench again") from None
    if not any(found.values()):
        raise ConfigError("--out", f"no finished runs under {out / 'runs'}", "run bench with --url and --mode first")
    report = compare(found)
    write_atomically(str(out / "report.json"), json.dumps(report, indent=2) + "\n", "--out")
    write_atomically(str(out / "report.md"), markdown(report), "--out")
    write_plots(report, out)
    return out / "report.md"


def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if not args.report_only:
        if not (args.url and args.mode):
            raise ConfigError("bench", "needs --url and --mode (or --report-only)", "see nim-specdec bench --help")
        _measure(args, out)
    report = build_report(out)
    _say(f"report: {report}, {out / 'report.json'}, plots: {', '.join(p.name for p in sorted(out.glob('*.png')))}")
    print(report.read_text(), end="")
    return 0
