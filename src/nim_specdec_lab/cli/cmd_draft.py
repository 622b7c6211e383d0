"""`nim-specdec draft train CAPTURE --target SRC --out DIR`: a draft trained on captured traffic, measured.

The flow is nim_specdec_lab.draft.flow; this module parses the arguments and calls it. Exit codes: 0 the
draft is made; 2 a bad input (capture, target, output directory, disk, option, the training stage missing);
3 the target cannot be materialized, a server does not come up, the training stage fails or its export does not
fit the target; 4 the server (--url or the one started) cannot be reached or answers wrongly.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Sequence

from nim_specdec.errors import ConfigError

VLLM_ARG = "--vllm-arg"


def rewrite_argv(argv: Sequence[str]) -> list[str]:
    """Everything after `--` is vLLM's: each becomes --vllm-arg=ARG, so argparse never reads it as ours."""
    argv = list(argv)
    if "--" not in argv:
        return argv
    cut = argv.index("--")
    return argv[:cut] + [f"{VLLM_ARG}={arg}" for arg in argv[cut + 1 :]]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="draft_command", metavar="ACTION")
    train = sub.add_parser(
        "train",
        help="train an EAGLE3 draft on a capture, check it against the target, measure it on held-out requests",
        description="Split the capture, regenerate the answers with the target, train an EAGLE3 draft, export "
        "it into OUT/draft and measure it on the held-out requests (see docs/draft.md).",
    )
    train.add_argument("capture", metavar="CAPTURE", help="capture file (mooncake_payload or raw_payload lines)")
    train.add_argument(
        "--target",
        help="the target: a local directory, or any source NIM_MODEL_PATH takes (default: the model the NIM_* "
        "variables name, as serve would)",
    )
    train.add_argument("--out", required=True, help="output directory (new, empty, or made by draft train)")
    train.add_argument("--url", help="a running server of the target to regenerate with (default: start one)")
    train.add_argument("--seed", type=int, default=0, help="seed of the split and the training (default 0)")
    train.add_argument("--held-out", type=float, default=0.2, help="share of requests held out (default 0.2)")
    train.add_argument("--steps", type=int, help="training steps (default: the training stage's)")
    train.add_argument("-k", "--num-speculative-tokens", dest="k", type=int, default=3, help="K (default 3)")
    train.add_argument("--min-requests", type=int, default=20, help="fewest distinct requests accepted (default 20)")
    train.add_argument("--max-seq-len", type=int, default=2048, help="longest training sequence (default 2048)")
    train.add_argument("--learning-rate", type=float, default=1e-3, help="learning rate (default 1e-3)")
    train.add_argument("--aux-layers", help="target layers the head reads, comma-separated (default: see docs)")
    train.add_argument("--rounds", type=int, default=2, help="bench rounds of the measurement (default 2)")
    train.add_argument("--no-measure", action="store_true", help="train and export only; measure later")
    train.add_argument("--concurrency", type=int, default=4, help="regeneration requests in flight (default 4)")
    train.add_argument("--ready-timeout", type=float, default=900.0, help="seconds a server may take to start")
    train.add_argument(
        VLLM_ARG, dest="vllm_args", action="append", default=[], metavar="ARG",
        help="one vLLM argument for every server the command starts (or give them all after --)",
    )  # fmt: skip


def _positive(value: int | None, flag: str) -> None:
    if value is not None and value < 1:
        raise ConfigError(flag, f"{value} is below 1", "give a whole number from 1")


def _aux(text: str | None) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise ConfigError("--aux-layers", f"{text[:40]!r} is not comma-separated integers", "e.g. 2,16,29") from None


def run(args: argparse.Namespace) -> int:
    from nim_specdec_lab.draft.flow import DraftOptions, made_line, train_from_capture  # noqa: PLC0415 - +the lab on use
    from nim_specdec_lab.draft.trainer_seam import installed_trainer  # noqa: PLC0415 - the training stage on use

    if args.draft_command != "train":
        raise ConfigError("draft", "needs an action", "use nim-specdec draft train --help")
    for value, flag in ((args.steps, "--steps"), (args.k, "--num-speculative-tokens"),
                        (args.min_requests, "--min-requests"), (args.rounds, "--rounds"),
                        (args.concurrency, "--concurrency"), (args.max_seq_len, "--max-seq-len")):  # fmt: skip
        _positive(value, flag)
    if not args.no_measure and args.rounds < 2:
        raise ConfigError("--rounds", f"{args.rounds} is below 2", "use 2 or more: an interval needs two pairs")
    options = DraftOptions(
        capture=Path(args.capture),
        target=args.target,
        out=Path(args.out),
        url=args.url,
        seed=args.seed,
        held_out=args.held_out,
        steps=args.steps,
        k=args.k,
        min_requests=args.min_requests,
        max_seq_len=args.max_seq_len,
        learning_rate=args.learning_rate,
        aux_layers=_aux(args.aux_layers),
        rounds=args.rounds,
        measure=not args.no_measure,
        concurrency=args.concurrency,
        ready_timeout_s=args.ready_timeout,
        vllm_args=tuple(args.vllm_args),
    )

    def say(line: str) -> None:
        print(f"nim-specdec draft: {line}", file=sys.stderr, flush=True)

    made = train_from_capture(options, os.environ, installed_trainer, say)
    print(made_line(made))
    return 0
