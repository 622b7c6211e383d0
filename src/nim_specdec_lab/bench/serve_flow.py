"""bench --serve's run: in each round every side's server started, measured and stopped (bench.serve_rounds), and
the context its report needs written beside the measurements (bench.report_files reads it back).

Takes a ServeBench the command's edge built and checked: everything that can be refused was refused before the
first server starts (the env files, the options, AIPerf, the trace).
"""

from __future__ import annotations

import json
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from nim_specdec.config import variables as var
from nim_specdec.errors import ConfigError
from nim_specdec.files.output_files import write_atomically
from nim_specdec_lab.bench.report_files import CONTEXT_JSON
from nim_specdec_lab.bench.serve_report import IGNORE_EOS
from nim_specdec_lab.bench.serve_rounds import BASELINE, SERVE_DIR, ServeRunOptions, run_rounds


@dataclass(frozen=True)
class ServeBench:
    """What bench --serve runs: each side's server environment (the baseline first; no API key), the env file
    each side came from (None: the current environment), the vLLM arguments of every server, how each server
    is measured, and the margin the report judges with (None: the statistics' default)."""

    envs: Mapping[str, Mapping[str, str]]
    sources: Mapping[str, str | None]
    vllm_args: tuple[str, ...]
    options: ServeRunOptions
    margin: float | None = None


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def run_serve(bench: ServeBench, workloads: Sequence[Any], out: Path, say: Callable[[str], None]) -> None:
    if bench.options.ignore_eos:
        say(f"warning: {IGNORE_EOS}")
    for workload in workloads:
        if workload.note:
            say(f"{workload.category}: {workload.note}")
    try:
        if (out / SERVE_DIR).exists():
            shutil.rmtree(out / SERVE_DIR)  # a new run's rounds never mix with an older run's
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConfigError("--out", f"cannot use {out} ({err.strerror})", "choose a writable directory") from None
    # A Job's pod or a shell's kill sends SIGTERM: unwind as for Ctrl-C, so that the server running now is
    # stopped by its context manager instead of outliving bench.
    signal.signal(signal.SIGTERM, _interrupt)
    facts = run_rounds(dict(bench.envs), list(bench.vllm_args), workloads, bench.options, out, say)
    context = {
        "rounds": bench.options.rounds,
        "margin": bench.margin,
        "baseline_off": bench.sources[BASELINE] is None,
        "ignore_eos": bench.options.ignore_eos,
        "greedy": bench.options.greedy,
        "max_tokens": bench.options.max_tokens,
        "timestamps_ms": {w.category: list(w.timestamps_ms) if w.timestamps_ms else None for w in workloads},
        "requests": {w.category: [dict(r) for r in w.requests] for w in workloads},
        "max_model_len": facts["max_model_len"],
        "prompt_tokens": facts["prompt_tokens"],
        "servers": facts["servers"],
        "order_by_round": facts["order_by_round"],
        "seconds": facts["seconds"],
        "per_request_spec_decode_metrics": {
            side: "--per-request-spec-decode-metrics" in argv for side, argv in facts["argv"].items()
        },
        "sides": {
            name: path or ("the current environment" + (f" with {var.SPECDEC_ENABLE}=0" if name == BASELINE else ""))
            for name, path in bench.sources.items()
        },
    }
    write_atomically(str(out / SERVE_DIR / CONTEXT_JSON), json.dumps(context, allow_nan=False) + "\n", "--out")
    say(f"bench: {bench.options.rounds} rounds done in {facts['seconds']:.0f} s")
