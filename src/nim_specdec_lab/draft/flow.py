"""`draft train`: capture -> split -> regenerate with the target -> train -> check the export -> measure.

The imperative shell: it reads the capture, starts servers, writes OUT, and calls the training stage
through the seam (draft.trainer_seam). Every check that needs no server runs first: the capture, the split,
the output directory, the target's config (the flow's and the training stage's checks), before the target is
asked for anything.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping

from nim_specdec.config import variables as var
from nim_specdec.errors import ConfigError, MaterializeError, UnreachableError
from nim_specdec.files.output_files import write_atomically
from nim_specdec.files.regular_file import open_regular_text, read_inside
from nim_specdec.preflight import model_config as mc
from nim_specdec.preflight.checkpoint import read_checkpoint
from nim_specdec.preflight.config_file import read_model_config
from nim_specdec_lab.draft import acceptance_report as report
from nim_specdec_lab.draft.capture_input import Capture, mooncake_lines, parse_draft_capture
from nim_specdec_lab.draft.export_check import export_problems, refuse_untrainable, train_aux_problem
from nim_specdec_lab.draft.measure import HELD_OUT_TRACE, MeasureJob, bench_sides, run_bench, write_trace
from nim_specdec_lab.draft.output_dir import OutputLayout, claim, clear_staging, publish, refuse_foreign
from nim_specdec_lab.draft.regenerate import Regenerated, regenerate, rows_jsonl
from nim_specdec_lab.draft.serve_line import serve_command
from nim_specdec_lab.draft.split import MIN_TRAIN, Split, split
from nim_specdec_lab.draft.trainer_seam import DraftJob, Trained, Trainer

Say = Callable[[str], None]
MAX_CAPTURE_BYTES = 4 * 1024**3
MAX_WORK_FILE_BYTES = 8 * 1024**3  # the answers to a capture's requests, as token ids and text
TRAIN_ROWS = "train.jsonl"
SPLIT_JSON = "split.json"


@dataclass(frozen=True)
class DraftOptions:
    capture: Path
    target: str | None  # None: the target the NIM_* variables name
    out: Path
    url: str | None = None
    seed: int = 0
    held_out: float = 0.2
    steps: int | None = None
    k: int = 3
    min_requests: int = 20
    max_seq_len: int = 2048
    learning_rate: float = 1e-3
    aux_layers: tuple[int, ...] | None = None
    rounds: int = 2
    measure: bool = True
    concurrency: int = 4
    ready_timeout_s: float = 900.0
    vllm_args: tuple[str, ...] = ()


@dataclass(frozen=True)
class Made:
    draft: Path
    serve: str
    trained: Trained
    acceptance: Mapping[str, Any] | None


def read_capture(path: Path, minimum: int) -> Capture:
    try:
        with open_regular_text(path, MAX_CAPTURE_BYTES) as src:
            lines = src.read().splitlines()
    except OSError as err:
        raise ConfigError("--capture", f"cannot read {path} ({err.strerror or err})", "give a capture file") from None
    except UnicodeDecodeError:
        raise ConfigError("--capture", f"{path} is not UTF-8 text", "give a JSONL capture file") from None
    return parse_draft_capture(lines, minimum)


def split_record(parts: Split, seed: int, fraction: float) -> dict[str, Any]:
    return {
        "rule": "held out when sha256('<seed>:<request id>')[:8] / 2**64 < fraction; id = sha256(payload)[:16]",
        "seed": seed,
        "fraction": fraction,
        "train": [r.id for r in parts.train],
        "held_out": [r.id for r in parts.held_out],
    }


def _digest(ids: Any) -> str:
    return hashlib.sha256(json.dumps(ids).encode()).hexdigest()


def _previous_rows(layout: OutputLayout, record: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """The training rows an earlier run of the same split regenerated, or None (then they are made again)."""
    try:
        old = json.loads(read_inside(layout.work / SPLIT_JSON, layout.work, MAX_WORK_FILE_BYTES))
        if _digest(old.get("train")) != _digest(record["train"]):
            return None
        text = read_inside(layout.work / TRAIN_ROWS, layout.work, MAX_WORK_FILE_BYTES).decode("utf-8")
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
        return rows if rows and all(isinstance(r, dict) and r.get("output_token_ids") for r in rows) else None
    except (OSError, ValueError, AttributeError):  # absent, a link, cut short, not ours to trust: made again
        return None


def _post_to(url: str) -> Callable[[str, dict[str, Any]], Mapping[str, Any]]:
    from nim_specdec_lab.ngram.http_replay import http_json  # noqa: PLC0415 - the HTTP edge, on use

    return lambda path, body: http_json(url.rstrip("/") + path, body)


def _regenerate_at(url: str, parts: Split, concurrency: int, say: Say) -> list[Regenerated]:
    from nim_specdec_lab.ngram.http_replay import server_model  # noqa: PLC0415 - the HTTP edge, on use

    model, _ = server_model(url)
    started = time.monotonic()
    step = max(1, len(parts.train) // 20)

    def done(n: int, total: int) -> None:
        if n % step and n != total:
            return
        spent = time.monotonic() - started
        left = spent / n * (total - n)
        say(f"regenerating with the target: {n}/{total} requests, {n / spent:.1f}/s, about {left:.0f} s left")

    return regenerate(_post_to(url), parts.train, model, concurrency, done)


def regenerate_rows(
    options: DraftOptions, target_dir: Path, parts: Split, environ: Mapping[str, str], say: Say
) -> list[Regenerated]:
    if options.url:
        return _regenerate_at(options.url, parts, options.concurrency, say)
    from nim_specdec_lab.server_process import ServerSpec, running_server  # noqa: PLC0415 - starts a server

    env = {k: v for k, v in environ.items() if k not in (var.DRAFT_MODEL_PATH, var.SPECDEC_ARGS)}
    env.update({var.MODEL_PATH: str(target_dir), var.SPECDEC_ENABLE: "0"})
    log = options.out / "work" / "regenerate-server.log"
    say(f"starting the target's server to regenerate the answers (log {log})")
    spec = ServerSpec(env=env, args=options.vllm_args, ready_timeout_s=options.ready_timeout_s, log_path=log)
    with running_server(spec) as server:
        say(f"target server ready in {server.ready_seconds:.0f} s")
        return _regenerate_at(server.url, parts, options.concurrency, say)


def progress_line(event: Any) -> str:
    """One line of the training stage's progress, whatever it reports (a line, or an object with figures)."""
    if isinstance(event, str):
        return event
    if all(hasattr(event, name) for name in ("step", "max_steps", "loss", "tokens_per_second", "seconds_left")):
        return (
            f"step {event.step}/{event.max_steps}, loss {event.loss:.4g}, {event.tokens_per_second:.0f} tokens/s, "
            f"about {event.seconds_left:.0f} s left"
        )
    line = getattr(event, "line", None)
    if callable(line):
        return str(line())
    fields = event if isinstance(event, Mapping) else vars(event) if hasattr(event, "__dict__") else {}
    return ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in fields.items()) or str(event)


def worth_a_line(event: Any) -> bool:
    """The first and last steps and about every 5% between: a long run's progress in some 20 lines."""
    step, total = getattr(event, "step", None), getattr(event, "max_steps", None)
    if not isinstance(step, int) or not isinstance(total, int) or total <= 0:
        return True
    return step <= 1 or step >= total or step % max(1, total // 20) == 0


def check_export(draft_dir: Path, target: Mapping[str, Any], what: str) -> None:
    draft_cfg = read_model_config(draft_dir, what)
    problems = export_problems(draft_cfg, read_checkpoint(draft_dir, what), target, what)
    if problems:
        raise MaterializeError(what, f"the export does not fit the target: {problems[0]}", "see docs/draft.md")


def _exported(staging: Path, exported: Path) -> Path:
    """The export at the staging path (a stage that wrote elsewhere inside OUT is moved there)."""
    if os.path.lexists(staging) and exported.absolute() == staging.absolute():
        return staging
    if not exported.is_dir() or exported.is_symlink():
        raise MaterializeError(
            "draft train", f"the training stage reported {exported}, which holds no export", "see its log"
        )
    os.rename(exported, staging)
    return staging


def train_from_capture(
    options: DraftOptions, environ: Mapping[str, str], trainer_of: Callable[[], Trainer], say: Say
) -> Made:
    """`trainer_of` gives the training stage; it is asked once the inputs are checked, before any server."""
    started = time.monotonic()
    capture = read_capture(options.capture, options.min_requests)
    parts = split(capture.requests, options.seed, options.held_out)
    refuse_foreign(options.out)  # before a download: a bad --out costs nothing
    from nim_specdec_lab.draft.target_source import materialize_target, target_words  # noqa: PLC0415 - fetchers on use

    target_dir = materialize_target(options.target, environ)
    target = read_model_config(target_dir, "--target")
    refuse_untrainable(target, str(target_dir))
    layers = int(mc.first(target, "num_hidden_layers"))
    if options.aux_layers is not None:
        problem = train_aux_problem(options.aux_layers, layers)
        if problem:
            raise ConfigError("--aux-layers", problem, f"name distinct layers from 1 to {layers}")
    trainer = trainer_of()
    trainer.check_target(target, str(target_dir), options.aux_layers)  # the stage's own refusals, before a server
    layout = claim(options.out)
    say(  # once every cheap check has passed: a bad input prints its error line alone
        f"{options.capture}: {len(capture.requests)} distinct {capture.format} requests "
        f"({capture.duplicates} repeats), {len(parts.train)} to train on, {len(parts.held_out)} held out "
        f"(seed {options.seed})"
    )

    record = split_record(parts, options.seed, options.held_out)
    rows_path = layout.work / TRAIN_ROWS
    rows = _previous_rows(layout, record)
    if rows is not None:
        say(f"reusing the regenerated answers in {rows_path} (same split)")
    else:
        results = regenerate_rows(options, target_dir, parts, environ, say)
        failed = [r for r in results if r.row is None]
        if len(results) - len(failed) < MIN_TRAIN:
            first = failed[0].error if failed else "no answers"
            raise UnreachableError(
                "draft train",
                f"the target answered {len(results) - len(failed)} of {len(results)} training requests ({first})",
                "check the server's log",
            )
        if failed:
            say(f"warning: {len(failed)} training requests got no usable answer and are left out ({failed[0].error})")
        write_atomically(str(rows_path), rows_jsonl(results), "--out", mode=0o600)
        write_atomically(str(layout.work / SPLIT_JSON), json.dumps(record) + "\n", "--out", mode=0o600)
        rows = [r.row for r in results if r.row]
    write_trace(layout.work / "measure" / HELD_OUT_TRACE, mooncake_lines(parts.held_out))

    tokens = sum(len(r["prompt_token_ids"]) + len(r["output_token_ids"]) for r in rows)
    # The stage exports into a path that does not exist yet (it renames a whole folder there); the flow checks
    # it and renames it to OUT/draft. The untrained export has a work folder of its own: it must never resume
    # from the trained head's checkpoints. The stage checks the disk its run needs before it starts.
    job = DraftJob(
        target_dir=target_dir,
        data_file=rows_path,
        work_dir=layout.work / "training",
        output_dir=clear_staging(layout, "draft"),
        seed=options.seed,
        steps=options.steps,
        num_speculative_tokens=options.k,
        aux_layer_ids=options.aux_layers,
        max_seq_len=options.max_seq_len,
        learning_rate=options.learning_rate,
    )
    say(f"training an EAGLE3 head on {len(rows)} answers ({tokens} tokens)")
    trained = trainer.train(
        job, lambda event: say(f"training: {progress_line(event)}") if worth_a_line(event) else None
    )
    staged = _exported(job.output_dir, trained.draft_dir)
    check_export(staged, target, "trained draft")
    draft_dir = publish(layout, staged, "draft")
    trained = replace(trained, draft_dir=draft_dir)

    untrained_job = replace(
        job, work_dir=layout.work / "training-untrained", output_dir=clear_staging(layout, "untrained")
    )
    say("exporting the same draft untrained (the measurement's reference)")
    untrained = _exported(untrained_job.output_dir, trainer.export_untrained(untrained_job).draft_dir)
    check_export(untrained, target, "untrained draft")
    untrained_dir = publish(layout, untrained, "untrained")

    serve = serve_command(target_words(options.target, environ), draft_dir, options.k)
    facts = {
        "library": trained.library,
        "steps": trained.steps,
        "final_loss": trained.final_loss,
        "tokens": trained.tokens,
        "train_seconds": round(trained.seconds, 1),
        "hidden_states_path": trained.hidden_states_path,
        "num_speculative_tokens": options.k,
        "aux_layer_ids": list(trained.aux_layer_ids or options.aux_layers or ()),
        "train_requests": len(rows),
        "held_out_requests": len(parts.held_out),
        "seed": options.seed,
        "held_out_fraction": options.held_out,
        "rounds": options.rounds,
        "serve": serve,
    }
    acceptance = None
    if options.measure:
        bench = run_bench(
            MeasureJob(
                target_dir,
                draft_dir,
                untrained_dir,
                layout.work / "measure" / HELD_OUT_TRACE,
                layout.work / "measure" / "bench",
                options.k,
                options.rounds,
                options.vllm_args,
                options.ready_timeout_s,
            ),  # fmt: skip
            environ,
            say,
        )
        facts["minutes"] = round((time.monotonic() - started) / 60, 1)
        acceptance = report.acceptance(bench, bench_sides(), facts)
        write_atomically(str(draft_dir / "acceptance.json"), json.dumps(acceptance, indent=2) + "\n", "--out")
        write_atomically(str(draft_dir / "acceptance.md"), report.markdown(acceptance), "--out")
    return Made(draft_dir, serve, trained, acceptance)


def made_line(made: Made) -> str:
    t = made.trained
    figures = ""
    if made.acceptance:
        cells = made.acceptance["configurations"]

        def al(name: str) -> str:
            cell = (cells.get(name) or {}).get("acceptance_length") or {}
            return f"{cell['value']:.2f}" if cell.get("value") is not None else "n/a"

        figures = (
            f"; held-out acceptance length trained {al('trained')}, untrained {al('untrained')}, ngram {al('ngram')}"
        )
    loss = "none" if t.final_loss is None else f"{t.final_loss:.4g}"
    return f"draft {made.draft} ({t.library}, {t.steps} steps, loss {loss}){figures}; serve it: {made.serve}"
