"""The shell of `bench --serve`: rounds of a baseline's server and each candidate's, each started through the
launcher (tune.servers), measured in the same closed loop, and stopped before the next one starts (also on
Ctrl-C or an error).

Order: rotated. Round n starts the sides in the order given (the baseline, then each candidate) rotated by
n - 1 places, so that over as many rounds as there are sides every side holds every position once (a
Latin square): a machine that speeds up or slows down over a round, or a first server that pays for a cold
page cache, weighs on every side alike. With one candidate the sides alternate; with an odd number of
rounds one side then holds the first place once more, and a position effect p moves the speedup by p /
rounds (docs/measuring.md). Every server gets the same warm-up before each measured run. The order of each
round is recorded in the report.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from nim_specdec.errors import LauncherError
from nim_specdec.launch.resolve import plan_for
from nim_specdec.observe.smoke import post_json
from nim_specdec_lab.bench.inputs import Workload
from nim_specdec_lab.ngram.http_replay import http_json
from nim_specdec_lab.replay import ReplaySpec, run_replay
from nim_specdec_lab.replay.measure import warmup_for
from nim_specdec_lab.replay.request_acceptance import with_per_request_metrics
from nim_specdec_lab.tune.runs.measurement import MeasureOptions
from nim_specdec_lab.tune.servers import ServerLog, served, served_model

BASELINE, CANDIDATE = "baseline", "candidate"
ORDER = (
    "rotated order: round n starts the sides (the baseline, then the candidates in the order given) rotated "
    "by n - 1 places, so each side holds each position equally often over as many rounds as sides; each "
    "server is started fresh through the launcher, warmed up alike, and stopped before the next"
)
SERVE_DIR = "serve"

Say = Callable[[str], None]


@dataclass(frozen=True)
class ServeRunOptions:
    rounds: int
    concurrencies: tuple[int, ...]
    request_count: int | None
    greedy: bool
    max_tokens: int | None
    ignore_eos: bool
    warmup: int | None  # None: 2 x concurrency + 2
    tokenizer: str | None
    aiperf: Path
    ready_timeout_s: float
    aiperf_extra: tuple[str, ...] = ()


def side_names(candidates: int) -> tuple[str, ...]:
    """The baseline, then `candidate` (one) or `candidate1` ... `candidateN` (several)."""
    if candidates == 1:
        return (BASELINE, CANDIDATE)
    return (BASELINE, *(f"{CANDIDATE}{n}" for n in range(1, candidates + 1)))


def order_of(round_no: int, sides: Sequence[str] = (BASELINE, CANDIDATE)) -> tuple[str, ...]:
    """Round `round_no`'s order: the sides rotated by round_no - 1 places."""
    shift = (round_no - 1) % len(sides)
    return (*sides[shift:], *sides[:shift])


def speculates(env: Mapping[str, str], args: Sequence[str]) -> bool:
    """Whether the launcher's plan for this side speculates (a plan that cannot resolve: no; its server's
    start reports why)."""
    try:
        return bool(plan_for(env, list(args))[1].speculative.enabled)
    except LauncherError:
        return False


def prompt_lengths(url: str, model: str, requests: Sequence[Mapping[str, Any]]) -> list[int | None]:
    """Each request's prompt length as the server tokenizes it (vLLM's /tokenize); None where it did not say."""
    out: list[int | None] = []
    for body in requests:
        ask = {
            "model": model,
            **({"messages": body["messages"]} if "messages" in body else {"prompt": body.get("prompt", "")}),
        }
        status, answer = post_json(url + "/tokenize", ask, timeout=30)
        count = answer.get("count") if status == 200 and isinstance(answer, dict) else None
        out.append(count if isinstance(count, int) else None)
    return out


def served_tokenizer(url: str) -> str:
    """The served model's own directory (vLLM's /v1/models `root`) when it is on this machine: AIPerf
    needs a tokenizer to start, and its builtin one is downloaded on first use."""
    try:
        root = http_json(url.rstrip("/") + "/v1/models", timeout=30)["data"][0].get("root")
    except (LauncherError, KeyError, IndexError, TypeError, AttributeError):
        return "builtin"
    return root if isinstance(root, str) and (Path(root) / "tokenizer_config.json").is_file() else "builtin"


def run_dir(out: Path, round_no: int, side: str, concurrency: int, category: str) -> Path:
    return out / SERVE_DIR / f"r{round_no}" / side / f"c{concurrency}" / category


def run_rounds(
    envs: Mapping[str, Mapping[str, str]],
    args: Sequence[str],
    workloads: Sequence[Workload],
    options: ServeRunOptions,
    out: Path,
    say: Say,
) -> dict[str, Any]:
    """Every round's measurements under OUT/serve; returns what the report needs beyond them. `envs`: each
    side's environment, the baseline's first."""
    run = MeasureOptions(
        concurrencies=options.concurrencies,
        requests_per_run=options.request_count,
        max_tokens=options.max_tokens,
        ignore_eos=options.ignore_eos,
        aiperf_bin=options.aiperf,
        ready_timeout_s=options.ready_timeout_s,
    )
    sides = tuple(envs)  # the baseline first, then the candidates in the order given
    argv = {side: with_per_request_metrics(args, speculates(envs[side], args)) for side in sides}
    log, facts = ServerLog(), {"max_model_len": None, "prompt_tokens": None}
    started = time.monotonic()
    say(f"bench: {options.rounds} rounds x {len(sides)} servers; {ORDER}")
    orders = {str(n): list(order_of(n, sides)) for n in range(1, options.rounds + 1)}
    for round_no in range(1, options.rounds + 1):
        for side in order_of(round_no, sides):
            with served(f"{side}-r{round_no}", envs[side], argv[side], out, run, log, say, "bench") as server:
                model, max_len = served_model(server.url)
                tokenizer = options.tokenizer or served_tokenizer(server.url)
                if facts["prompt_tokens"] is None:
                    facts["max_model_len"] = max_len
                    facts["prompt_tokens"] = {
                        w.category: prompt_lengths(server.url, model, w.requests) for w in workloads
                    }
                for concurrency in options.concurrencies:
                    for workload in workloads:
                        spec = ReplaySpec(
                            url=server.url,
                            model=model,
                            requests=workload.requests,
                            concurrency=concurrency,
                            schedule="closed",
                            request_count=options.request_count,
                            greedy=options.greedy,
                            max_tokens=options.max_tokens,
                            ignore_eos=options.ignore_eos,
                            tokenizer=tokenizer,
                            warmup=warmup_for(concurrency, options.warmup),
                            aiperf_extra=options.aiperf_extra,
                            labels=workload.request_labels(),
                        )
                        result = run_replay(
                            spec, run_dir(out, round_no, side, concurrency, workload.category), options.aiperf
                        )
                        say(
                            f"bench: round {round_no}/{options.rounds}, {side}, {workload.category}, concurrency "
                            f"{concurrency}: {result.output_tokens_per_s:.1f} output tokens/s "
                            f"({result.ok_count}/{result.request_count} ok)"
                        )
    return {
        "servers": log.starts,
        "seconds": round(time.monotonic() - started, 1),
        "argv": argv,
        "order_by_round": orders,
        **facts,
    }
