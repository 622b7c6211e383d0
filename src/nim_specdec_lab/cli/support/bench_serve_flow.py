"""`nim-specdec bench --serve`: its options, env files and environment read into a ServeBench, which
bench.serve_flow runs. Everything that can be refused is refused here, before the first server starts: the env
files, the options, AIPerf (the trace was read before).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any, Callable, Sequence

from nim_specdec.errors import ConfigError
from nim_specdec.files.regular_file import read_regular
from nim_specdec_lab.bench import serve_flow
from nim_specdec_lab.bench.env_file import parse_env_file, side_env
from nim_specdec_lab.bench.serve_flow import ServeBench
from nim_specdec_lab.bench.serve_rounds import ServeRunOptions, side_names
from nim_specdec_lab.cli.support.bench_io import concurrencies
from nim_specdec_lab.replay.aiperf_run import find_aiperf
from nim_specdec_lab.server_key import keyless

MAX_ENV_FILE_BYTES = 1024 * 1024  # an env file is a few lines


def _env_file(path: str | None, option: str) -> dict[str, str] | None:

    if path is None:
        return None
    try:
        lines = read_regular(path, MAX_ENV_FILE_BYTES).decode("utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(
            option,
            f"cannot read {path} ({getattr(err, 'strerror', None) or err})",
            "point it at an env file (docker run --env-file form)",
        ) from None
    return parse_env_file(lines, option, path, os.environ)


def _check(args: argparse.Namespace) -> None:
    if args.rounds < 2:
        raise ConfigError("--rounds", f"{args.rounds} is below 2", "use 2 or more rounds: an interval needs two pairs")
    if args.schedule != "closed":
        raise ConfigError(
            "--schedule", f"{args.schedule} with --serve", "--serve measures the closed loop; drop --schedule"
        )
    if args.margin is not None and not 0 <= args.margin < 1:
        raise ConfigError("--margin", f"{args.margin} is not from 0 to below 1", "e.g. 0.03 for 3%")
    if args.ready_timeout <= 0:
        raise ConfigError("--ready-timeout", f"{args.ready_timeout} is not above 0", "give seconds, e.g. 900")


def run_serve(args: argparse.Namespace, workloads: Sequence[Any], out: Path, say: Callable[[str], None]) -> None:
    """The --serve options, env files and environment read and checked into a ServeBench, then run."""

    _check(args)
    levels_c = concurrencies(args.concurrency, several=True)
    files = list(args.candidate or [None])  # no --candidate: the current environment
    names = side_names(len(files))
    envs = {names[0]: side_env(os.environ, _env_file(args.baseline, "--baseline"), speculation_off=True)}
    for name, path in zip(names[1:], files):
        envs[name] = side_env(os.environ, _env_file(path, "--candidate"), speculation_off=False)
    vllm_args = list(args.vllm_args or [])
    if vllm_args[:1] == ["--"]:
        vllm_args = vllm_args[1:]
    keyed = {name: keyless(env, vllm_args, "bench --serve") for name, env in envs.items()}
    envs = {name: env for name, (env, _) in keyed.items()}
    for note in sorted({note for _, note in keyed.values() if note}):
        say(note)
    options = ServeRunOptions(
        rounds=args.rounds,
        concurrencies=levels_c,
        request_count=args.request_count,
        greedy=args.greedy,
        max_tokens=args.max_tokens,
        ignore_eos=args.ignore_eos,
        warmup=args.warmup,
        tokenizer=args.tokenizer,
        aiperf=Path(find_aiperf(args.aiperf)),
        ready_timeout_s=args.ready_timeout,
        aiperf_extra=tuple(args.extra),
    )
    sources = dict(zip(names, [args.baseline, *files]))
    run = ServeBench(envs, sources, tuple(vllm_args), options, args.margin)
    serve_flow.run_serve(run, workloads, out, say)
