"""The held-out measurement: bench --serve over the held-out requests, the trained draft against the same
draft untrained and n-gram, all against speculation off in the same rounds.

bench runs as a child process (`python -m nim_specdec bench --serve`): its servers, rounds, AIPerf replay,
counters and report are bench's, unchanged; this module writes its inputs (the held-out capture and one env
file per configuration) and reads its report.json.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from nim_specdec.config import variables as var
from nim_specdec.errors import ConfigError, MaterializeError
from nim_specdec.files.output_files import write_atomically
from nim_specdec.files.regular_file import read_json_inside
from nim_specdec_lab.bench.serve_rounds import side_names
from nim_specdec_lab.draft.acceptance_report import CONFIGURATIONS
from nim_specdec_lab.draft.serve_line import speculative_config
from nim_specdec_lab.tune.lineup.candidates import ngram_config

MAX_REPORT_BYTES = 64 * 1024 * 1024
HELD_OUT_TRACE = "held-out.jsonl"


@dataclass(frozen=True)
class MeasureJob:
    target_dir: Path
    trained: Path
    untrained: Path
    held_out_trace: Path  # mooncake_payload lines
    out: Path  # bench's --out
    k: int
    rounds: int
    vllm_args: tuple[str, ...] = ()
    ready_timeout_s: float = 900.0


def side_envs(job: MeasureJob) -> dict[str, dict[str, str]]:
    """Each configuration's variables, as bench --serve's env files hold them. Each side gets a workspace of
    its own: the trained and the untrained draft both go by the guide's bare name, and the launcher refuses
    to repoint a workspace link another draft made."""

    def draft(path: Path) -> dict[str, str]:
        return {
            var.SPECDEC_ENABLE: "1",
            var.DRAFT_MODEL_PATH: str(path),
            var.SPECDEC_ARGS: json.dumps({"speculative_config": speculative_config(job.k)}),
        }

    sides = {
        "off": {var.SPECDEC_ENABLE: "0"},
        "trained": draft(job.trained),
        "untrained": draft(job.untrained),
        "ngram": {
            var.SPECDEC_ENABLE: "1",
            var.SPECDEC_ARGS: json.dumps({"speculative_config": ngram_config(job.k, 1, 4)}),
        },
    }
    return {
        name: {**values, var.WORKSPACE: str(job.out.parent / f"workspace-{name}")} for name, values in sides.items()
    }


def bench_sides() -> dict[str, str]:
    """bench's side name of each configuration: candidates are numbered in the order they are given."""
    return dict(zip(CONFIGURATIONS, side_names(len(CONFIGURATIONS))[1:]))


def bench_argv(job: MeasureJob, env_files: Mapping[str, Path]) -> list[str]:
    argv = [
        sys.executable, "-m", "nim_specdec", "bench", "--serve",
        "--trace", str(job.held_out_trace),
        "--baseline", str(env_files["off"]),
    ]  # fmt: skip
    for name in CONFIGURATIONS:
        argv += ["--candidate", str(env_files[name])]
    argv += ["--rounds", str(job.rounds), "--concurrency", "1", "--out", str(job.out)]
    argv += ["--ready-timeout", str(job.ready_timeout_s)]
    return argv + (["--", *job.vllm_args] if job.vllm_args else [])


def bench_environment(environ: Mapping[str, str], target_dir: Path) -> dict[str, str]:
    """The user's environment for every side, with the target, and without a draft or speculative setting of
    its own (each side's file says its own; n-gram must not inherit a draft)."""
    env = {k: v for k, v in environ.items() if k not in (var.DRAFT_MODEL_PATH, var.SPECDEC_ARGS, var.SPECDEC_ENABLE)}
    env[var.MODEL_PATH] = str(target_dir)
    return env


def run_bench(job: MeasureJob, environ: Mapping[str, str], say: Callable[[str], None]) -> dict[str, Any]:
    job.out.mkdir(parents=True, exist_ok=True)
    files = {}
    for name, values in side_envs(job).items():
        path = job.out.parent / f"{name}.env"
        write_atomically(str(path), "".join(f"{k}={v}\n" for k, v in values.items()), "--out", mode=0o600)
        files[name] = path
    argv = bench_argv(job, files)
    say(f"measuring on the held-out requests: bench --serve, {job.rounds} rounds of off, trained, untrained, ngram")
    # bench's progress lines go to this command's stderr as they come
    proc = subprocess.run(argv, env=bench_environment(environ, job.target_dir), stdout=subprocess.DEVNULL, check=False)
    if proc.returncode != 0:
        raise MaterializeError(
            "draft train",
            f"the held-out measurement (bench --serve) exited with code {proc.returncode}",
            f"see its lines above and the server logs under {job.out}; a rerun reuses the regenerated answers",
        )
    data = read_json_inside(job.out / "report.json", job.out, MAX_REPORT_BYTES, ConfigError, "--out")
    if not isinstance(data, dict):
        raise ConfigError("--out", f"{job.out / 'report.json'} is not a JSON object", "rerun draft train")
    return data


def write_trace(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(str(path), text, "--out", mode=0o600)


__all__: Sequence[str] = ("MeasureJob", "bench_sides", "run_bench", "side_envs", "write_trace")
