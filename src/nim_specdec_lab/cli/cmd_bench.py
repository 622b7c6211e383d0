"""bench: measure speculative decoding on vs off over the same traffic, with AIPerf.

`--serve` starts the servers itself: in each of `--rounds` rounds a baseline's server (an env file, else the
current environment with NIM_SPECDEC_ENABLE=0) and a candidate's (an env file, else the current environment),
one at a time, in rotated order (recorded in the report), each measured in the same closed loop; every
speedup then comes with a 95% interval over the paired rounds and a verdict (nim_specdec_lab.stats).

Without --serve, run it once against the server with speculation off (`--mode off`) and once against the same model with
speculation on (`--mode on`), into the same `--out` directory; one server at a time is enough. Each run
keeps its artifacts under OUT/runs/MODE/CATEGORY and rebuilds the comparison: OUT/report.md,
OUT/report.json and three PNG plots.

By default the requests run as a closed loop (`--concurrency` in flight, the next sent as soon as one
finishes), so that output tokens/s measures the server. `--schedule timestamps` replays a capture at its
recorded arrival times instead; throughput then reflects the arrival rate, and the report says so.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields
from pathlib import Path
from typing import Sequence

from nim_specdec.config import variables as var
from nim_specdec.errors import ConfigError
from nim_specdec.files.regular_file import read_json_inside
from nim_specdec_lab.bench.inputs import SPEED_BENCH_CATEGORIES
from nim_specdec_lab.cli.support.bench_io import concurrencies as _concurrencies
from nim_specdec_lab.cli.support.bench_io import workloads as _workloads

EXTRA = "--extra"


def rewrite_argv(argv: Sequence[str]) -> list[str]:
    """`--extra --flag` as `--extra=--flag`: argparse refuses a value that starts with a dash."""
    out, i = [], 0
    argv = list(argv)
    while i < len(argv):
        if argv[i] == "--":  # vLLM's arguments for --serve: verbatim
            return out + argv[i:]
        if argv[i] == EXTRA and i + 1 < len(argv):
            out.append(f"{EXTRA}={argv[i + 1]}")
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", help="base URL of the server under test, e.g. http://localhost:8000")
    parser.add_argument("--mode", choices=("on", "off"), help="whether that server speculates")
    data = parser.add_mutually_exclusive_group()
    data.add_argument("--trace", help="mooncake_payload capture to replay (category: the file's stem)")
    data.add_argument(
        "--speed-bench",
        help="directory prepared by SPEED-Bench's prepare.py (qualitative.jsonl): its categories in one run per "
        "configuration, acceptance by category from each response",
    )
    parser.add_argument(
        "--categories", default=",".join(SPEED_BENCH_CATEGORIES), help="SPEED-Bench categories (comma-separated)"
    )
    parser.add_argument(
        "--schedule",
        choices=("closed", "timestamps"),
        default="closed",
        help="closed: --concurrency requests in flight (default); timestamps: at the capture's arrival times",
    )
    parser.add_argument(
        "--concurrency",
        default="1",
        help="requests in flight in the closed loop (default 1); with --serve a comma-separated list",
    )
    parser.add_argument(
        "--request-count", type=int, help="requests to send in the closed loop (default: each request once)"
    )
    parser.add_argument("--max-tokens", type=int, help="set max_tokens in every request (default: each request's own)")
    parser.add_argument("--greedy", action="store_true", help="send every request with temperature 0")
    parser.add_argument("--ignore-eos", action="store_true", help="generate up to max_tokens whatever the model emits")
    parser.add_argument(
        "--warmup", type=int, default=None, help="unmeasured requests sent first (default 2 x concurrency + 2)"
    )
    parser.add_argument("--model", help="served model name (default: the server's first model)")
    parser.add_argument(
        "--tokenizer",
        help="tokenizer AIPerf loads (token counts come from the server): a local directory, or "
        "'builtin' (tiktoken, fetched from the network on first use); default: the served model's "
        "directory when it is on this machine, else builtin",
    )
    parser.add_argument(
        "--metrics-path", default="/metrics", help="the server's Prometheus path (default /metrics; NIM: /v1/metrics)"
    )
    parser.add_argument(
        "--aiperf", help="the aiperf executable (default: $AIPERF_BIN, ./.venv-aiperf/bin/aiperf, aiperf on PATH)"
    )
    parser.add_argument(
        EXTRA,
        action="append",
        default=[],
        metavar="ARG",
        help="one more argument for aiperf profile (repeatable; --extra=--flag or --extra --flag)",
    )
    parser.add_argument("--out", default="specbench", help="output directory (default ./specbench)")
    parser.add_argument("--report-only", action="store_true", help="only rebuild the report from OUT")
    parser.add_argument(
        "--serve",
        action="store_true",
        help="start the baseline's and the candidate's servers itself, in rounds (see --rounds)",
    )
    parser.add_argument(
        "--baseline",
        help="--serve: env file (docker --env-file form) of the baseline "
        f"(default: the current environment with {var.SPECDEC_ENABLE}=0)",
    )
    parser.add_argument(
        "--candidate",
        action="append",
        help="--serve: env file of a candidate (default: the current environment); repeat it to compare "
        "several candidates with the same baseline in the same rounds",
    )
    parser.add_argument("--rounds", type=int, default=3, help="--serve: rounds, each starting both servers (default 3)")
    parser.add_argument(
        "--margin",
        type=float,
        default=None,
        help="--serve: faster / slower only where the 95%% interval lies beyond 1 +/- this (default 0.03)",
    )
    parser.add_argument(
        "--ready-timeout",
        type=float,
        default=900.0,
        help="--serve: seconds each server may take to start (default 900)",
    )
    parser.add_argument(
        "vllm_args",
        nargs=argparse.REMAINDER,
        help="--serve: after --, vLLM arguments for both servers, exactly as given to `nim-specdec serve`",
    )


DRIFT_NOTE = (
    "note: the off and on runs were measured on servers started elsewhere, at different times; drift "
    "between them is not controlled and the speedup has no interval (bench --serve measures both in rounds)"
)


def _say(line: str) -> None:
    print(f"nim-specdec bench: {line}", file=sys.stderr, flush=True)


def _measure(args: argparse.Namespace, out: Path) -> None:
    """The side's options read and checked into SideRuns (the workloads, AIPerf, the schedule), then measured."""
    from nim_specdec_lab.bench.side_runs import SideRuns, measure_side  # noqa: PLC0415 - +30 modules on --help
    from nim_specdec_lab.replay.aiperf_run import find_aiperf  # noqa: PLC0415 - +10 modules (~15 ms) on --help

    workloads = _workloads(args)
    aiperf = Path(find_aiperf(args.aiperf))  # before anything is sent
    if args.schedule == "timestamps":
        missing = [w.category for w in workloads if w.timestamps_ms is None]
        if missing:
            raise ConfigError(
                "--schedule",
                f"timestamps needs a capture with a timestamp on every line ({', '.join(missing)} has none)",
                "use --schedule closed",
            )
        if args.request_count is not None:
            raise ConfigError(
                "--request-count", "only the closed loop cycles the requests", "drop it with --schedule timestamps"
            )
    (concurrency,) = _concurrencies(args.concurrency, several=False)
    # The side's fields are the options of the same names (--mode, --url, --model, ...), these three as read.
    read = {"concurrency": concurrency, "aiperf": aiperf, "extra": tuple(args.extra)}
    named = {f.name: getattr(args, f.name) for f in fields(SideRuns) if f.name not in read}
    measure_side(SideRuns(**named, **read), workloads, out, _say)


def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if args.serve:
        from nim_specdec_lab.cli.support import bench_serve_flow  # noqa: PLC0415 - +60 modules (~90 ms) on --help

        if args.url or args.mode or args.report_only:
            raise ConfigError("--serve", "starts its own servers", "drop --url, --mode and --report-only with --serve")
        bench_serve_flow.run_serve(args, _workloads(args), out, _say)
    elif not args.report_only:
        if not (args.url and args.mode):
            raise ConfigError(
                "bench", "needs --url and --mode, or --serve (or --report-only)", "see nim-specdec bench --help"
            )
        if args.vllm_args:
            raise ConfigError("bench", "vLLM arguments after -- are for --serve", "drop them, or use --serve")
        if args.ignore_eos:
            from nim_specdec_lab.bench.serve_report import IGNORE_EOS  # noqa: PLC0415 - +57 modules (~90 ms) on --help

            _say(f"warning: {IGNORE_EOS}")
        _measure(args, out)
        _say(DRIFT_NOTE)
    from nim_specdec_lab.bench.report_files import build_report  # noqa: PLC0415 - +60 modules (~90 ms) on --help

    report = build_report(out)
    _say(f"report: {report}, {out / 'report.json'}, plots: {', '.join(p.name for p in sorted(out.glob('*.png')))}")
    print(report.read_text(), end="")
    if args.serve:
        from nim_specdec_lab.replay.measure import MAX_RUN_JSON_BYTES  # noqa: PLC0415 - +10 modules (~15 ms) on --help

        built = read_json_inside(out / "report.json", out, MAX_RUN_JSON_BYTES, ConfigError, "--out")
        for line in built.get("trace_notes") or []:
            _say(f"trace: {line}")
        for line in built.get("expected") or []:
            _say(line)
    return 0
