"""`nim-specdec tune --trace CAPTURE.jsonl [--concurrency 1,2,4,8] [--out DIR] [-- VLLM ARGS]`,
`nim-specdec tune --decide RUNS.jsonl [--weights C:W,...] [--margin M] [--json]` (the decision again from
recorded runs, no server) and `nim-specdec tune --export-runs OUT/tune.json` (tune.json's runs as RUNS).

Run with the same NIM_* environment and vLLM arguments as `serve`: it starts vLLM itself (one server at
a time, in rounds), measures speculation off and each candidate on this hardware, fits a cost model of the
engine step, chooses a K per batch size (0 where speculation loses), and recommends NIM_SPECDEC_ENABLE /
NIM_SPECDEC_ARGS only where the measured rounds' interval says it beats off; where they cannot tell, the
safer choice (what you run now, or off). Exit codes: 0 done, 2 bad input (trace,
options, configuration), 3 a server did not start (its log's last line is shown), 4 a server did not
answer or answered wrongly.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

from nim_specdec.errors import ConfigError

# The statistics' margin is tune's (both 3%); --decide reads it there and never loads the cost model.
from nim_specdec_lab.stats import DEFAULT_MARGIN

MAX_CONCURRENCY = 1024
# Rounds by default: the fewest whose intervals can tell a gain from noise at all (two rounds give one degree
# of freedom, an interval 12.7 standard errors wide); tests/lab/tune/test_tune_decision_noise.py measures what
# three rounds resolve at this machine's noise, and what more would.
DEFAULT_ROUNDS = 3


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--trace", help="captured traffic (mooncake_payload JSONL: {timestamp, payload})")
    parser.add_argument(
        "--decide",
        metavar="RUNS",
        help="decide again from recorded runs (JSON Lines: config, round, concurrency, output_tokens_per_s; "
        "config 'off' is the baseline) without starting a server",
    )
    parser.add_argument(
        "--weights",
        default=None,
        help="with --decide: each concurrency's share of the traffic, C:W,... (default: equal)",
    )
    parser.add_argument("--json", action="store_true", help="with --decide: print the decision as JSON")
    parser.add_argument(
        "--export-runs", metavar="TUNE_JSON", help="print a tune.json's runs as the JSON Lines --decide reads"
    )
    parser.add_argument(
        "--concurrency", default="1,2,4,8", help="requests in flight to measure at, comma-separated (default 1,2,4,8)"
    )
    parser.add_argument(
        "--out", default="tune-out", help="directory for tune.json, tune.md, plots, logs (default tune-out)"
    )
    parser.add_argument(
        "--max-k",
        type=int,
        default=4,
        help="largest K tried for the model-free methods (default 4); a configured draft keeps its own",
    )
    parser.add_argument(
        "--draft",
        default=None,
        help="a draft `draft train` made (its OUT/draft): measured as a candidate too, at the K of its "
        "acceptance.json (docs/draft.md)",
    )
    parser.add_argument(
        "--methods",
        default=None,
        help="model-free methods to try besides the configured one, comma-separated (default ngram, "
        "and suffix where arctic-inference is installed; 'none' for none)",
    )
    parser.add_argument(
        "--requests-per-run",
        type=int,
        default=None,
        help="requests per measurement (default: the largest of the trace's size, 8 x concurrency "
        "and enough for 2048 output tokens)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=DEFAULT_ROUNDS,
        help=f"rounds: round 1 serves off and every candidate; each later round serves off and the candidates "
        f"not yet dropped, the order rotated (off first in round 1; every configuration first as often, within "
        f"one round); the recommendation is decided on the paired rounds' 95%% intervals (default "
        f"{DEFAULT_ROUNDS}; one round gives no interval, so tune then keeps the safer choice)",
    )
    parser.add_argument(
        "--max-servers",
        type=int,
        default=None,
        help="servers a tune may start in all, counting round 1's K = 0 and model-choice servers (default: one sweep "
        "plus one, a sweep being off and every candidate at every K once, or what serving off and every "
        "candidate in every round needs where that is more); later rounds serve fewer candidates, or stop, "
        "to stay within it, and tune says so before starting",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="runs per concurrency on each server, interleaved; the server's median run stands for it in its "
        "round (default 1; more narrows one server's noise, not the interval between servers)",
    )
    parser.add_argument(
        "--max-tokens", type=int, default=None, help="force max_tokens in every request (default: the capture's)"
    )
    parser.add_argument("--ignore-eos", action="store_true", help="generate max_tokens whatever the model emits")
    parser.add_argument(
        "--margin",
        type=float,
        default=None,
        help="predicted gain K > 0 must bring over K = 0 at a batch size, and the margin a measured speedup "
        "must clear to read faster (default 0.03 = 3%%)",
    )
    parser.add_argument(
        "--ready-timeout", type=float, default=900.0, help="seconds each server may take to start (default 900)"
    )
    parser.add_argument(
        "--serving-platform",
        default=None,
        help="cpu or cuda: the platform the recommendation will serve on (default: this "
        "machine's); a schedule vLLM would drop there is not recommended",
    )
    parser.add_argument(
        "--serving-vllm-version",
        default=None,
        help="vLLM version the recommendation will serve with (default: the installed one)",
    )
    parser.add_argument("--aiperf", default=None, help="AIPerf executable (default $AIPERF_BIN, else aiperf on PATH)")
    parser.add_argument(
        "vllm_args", nargs=argparse.REMAINDER, help="after --: vLLM arguments, exactly as given to `nim-specdec serve`"
    )


def parse_concurrencies(text: str) -> tuple[int, ...]:
    values = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if not part.isdigit() or not 1 <= int(part) <= MAX_CONCURRENCY:
            raise ConfigError(
                "--concurrency",
                f"{part!r} in {text!r} is not an integer from 1 to {MAX_CONCURRENCY}",
                "give a comma-separated list such as 1,2,4,8",
            )
        values.add(int(part))
    if not values:
        raise ConfigError(
            "--concurrency", f"{text!r} names no concurrency", "give a comma-separated list such as 1,2,4,8"
        )
    return tuple(sorted(values))


def _methods(text: str | None) -> tuple[str, ...]:
    from nim_specdec.launch.facts import importable, require_method_package  # noqa: PLC0415 - +30 modules (~50 ms) on --help
    from nim_specdec_lab.tune.lineup.candidates import MODEL_FREE  # noqa: PLC0415 - +6 modules (~9 ms) on --help

    if text is None:
        return ("ngram", "suffix") if importable("arctic_inference.suffix_decoding") else ("ngram",)
    names = tuple(m.strip() for m in text.split(",") if m.strip())
    if names == ("none",):
        return ()
    for name in names:
        if name not in MODEL_FREE:
            raise ConfigError(
                "--methods", f"{name!r} is not a model-free method", f"use some of {', '.join(MODEL_FREE)} or none"
            )
    if "suffix" in names:
        require_method_package("suffix")  # the simulator needs the package as much as the server does
    return names


def _check(args: argparse.Namespace) -> None:
    for flag, value, low in (
        ("--max-k", args.max_k, 1),
        ("--requests-per-run", args.requests_per_run, 1),
        ("--max-tokens", args.max_tokens, 1),
        ("--repeat", args.repeat, 1),
        ("--rounds", args.rounds, 1),
        ("--max-servers", args.max_servers, 2),
    ):
        if value is not None and value < low:
            raise ConfigError(flag, f"{value} is below {low}", f"use {low} or more")
    if args.margin is not None and not 0 <= args.margin < 1:
        raise ConfigError("--margin", f"{args.margin} is not in [0, 1)", "use a fraction such as 0.03")
    if args.serving_platform is not None and args.serving_platform not in ("cpu", "cuda"):
        raise ConfigError(
            "--serving-platform",
            f"{args.serving_platform[:40]!r} is not a serving platform",
            "use cpu or cuda, or leave it out for this machine's",
        )
    if not args.ready_timeout > 0:
        raise ConfigError("--ready-timeout", f"{args.ready_timeout} is not positive", "give seconds, e.g. 900")


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def run(args: argparse.Namespace) -> int:
    if args.decide is not None and args.export_runs is not None:
        raise ConfigError("--decide", "given with --export-runs", "give one of them")
    if args.decide is None and (args.weights is not None or args.json):
        raise ConfigError("--weights" if args.weights is not None else "--json", "needs --decide", "add --decide RUNS")
    if args.decide is not None or args.export_runs is not None:
        _check(args)
        from nim_specdec_lab.tune.deciding import from_recorded  # noqa: PLC0415 - --decide never loads the cost model

        if args.export_runs is not None:
            return from_recorded.export_runs(args.export_runs)
        margin = DEFAULT_MARGIN if args.margin is None else args.margin
        return from_recorded.decide_again(args.decide, args.weights, margin, args.json)
    if args.trace is None:
        raise ConfigError("--trace", "is missing", "give the captured traffic, or --decide RUNS to decide again")
    from nim_specdec_lab.server_key import keyless  # noqa: PLC0415 - numpy and the launcher's settings: not for --decide
    from nim_specdec_lab.tune.engines.measured import serving_vllm_version  # noqa: PLC0415 - +38 modules (~60 ms) on --help
    from nim_specdec_lab.tune.runs.measurement import MeasureOptions  # noqa: PLC0415 - +52 modules (~80 ms) on --help
    from nim_specdec_lab.tune.session import tune  # noqa: PLC0415 - +85 modules (~130 ms) on --help
    from nim_specdec_lab.tune.session_state import TuneOptions  # noqa: PLC0415 - with the session

    _check(args)
    vllm_args = list(args.vllm_args or [])
    if vllm_args and vllm_args[0] == "--":
        vllm_args = vllm_args[1:]
    for token in vllm_args:
        flag = token.split("=", 1)[0]
        if flag in ("--port", "--host", "--uds"):
            # tune serves on a free loopback port of its own and measures there; another address would
            # leave it waiting for a server it cannot reach.
            raise ConfigError(
                "tune", f"{flag} is chosen by tune (a free loopback port)", f"drop {flag} from the vLLM arguments"
            )
    env, key_note = keyless(os.environ, vllm_args, "tune")
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConfigError("--out", f"cannot create {out} ({err.strerror})", "choose a writable directory") from None
    options = TuneOptions(
        trace=Path(args.trace),
        out=out,
        vllm_args=tuple(vllm_args),
        max_k=args.max_k,
        margin=DEFAULT_MARGIN if args.margin is None else args.margin,
        methods=_methods(args.methods),
        serving_platform=args.serving_platform,
        serving_vllm_version=serving_vllm_version(args.serving_vllm_version),
        max_servers=args.max_servers,
        trained_draft=Path(args.draft) if args.draft else None,
        run=MeasureOptions(
            concurrencies=parse_concurrencies(args.concurrency),
            requests_per_run=args.requests_per_run,
            max_tokens=args.max_tokens,
            ignore_eos=args.ignore_eos,
            aiperf_bin=Path(args.aiperf) if args.aiperf else None,
            ready_timeout_s=args.ready_timeout,
            repeat=args.repeat,
            rounds=args.rounds,
        ),
    )
    # A Job's pod or a shell's kill sends SIGTERM: unwind as for Ctrl-C so that the server running now
    # is stopped by its context manager instead of outliving tune.
    signal.signal(signal.SIGTERM, _interrupt)
    if key_note:
        print(f"tune: {key_note}", file=sys.stderr, flush=True)
    result = tune(env, options, lambda line: print(line, file=sys.stderr, flush=True))
    for line in (result.get("trace_notes") or {}).get("lines", []):
        print(f"tune: trace: {line}", file=sys.stderr, flush=True)
    if result.get("answer"):
        print(result["answer"]["line"], file=sys.stderr, flush=True)
    for key, value in result["recommended"].items():
        print(f"{key}={value}")
    return 0
