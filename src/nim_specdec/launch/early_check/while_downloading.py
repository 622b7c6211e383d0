"""vLLM's check while the weights download: a refused configuration stops the download, not the pod later.

The check needs only config.json and the tokenizer files of the target and the draft. When either is a
remote source that is not in the cache yet, those small files are read first into a private scratch
directory, the weights start downloading in a child process (launch/early_check/download_child.py, given the fetch
context and log format made from the parsed settings: the same cache and lock as always), and the check runs here
meanwhile. A refusal kills the
child's process group (a SIGTERM there unwinds through the download's cleanup): nothing reaches the cache,
what it verified stays in its own folder for the corrected start to resume, and the refusal is the one line
the user sees. A source whose small
files cannot be read first (an unusual layout, an older store) falls back to checking once the download is
complete.

The child is a process, not a thread, because a download in any backend (boto3's transfer threads,
s5cmd, huggingface_hub, the NGC client) can be stopped only by stopping the process that runs it.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Mapping, Sequence

from nim_specdec.config.settings import LogFormat
from nim_specdec.config.sources import SourceRef
from nim_specdec.engines.protocol.sections import VllmCheckResult
from nim_specdec.engines.vllm.check.gate import run_check
from nim_specdec.errors import ConfigError, LauncherError, MaterializeError, UnreachableError
from nim_specdec.fetchers.download.base import FetchContext
from nim_specdec.fetchers.registry import get_fetcher
from nim_specdec.launch.check_request import check_request
from nim_specdec.launch.facts import read_config
from nim_specdec.plan.plan_facts import SourceFacts
from nim_specdec.plan.plan_model import Plan
from nim_specdec.processes.child_process import die_with_parent, stop_group

# What vLLM reads before any weight: the model's config, its generation defaults and its tokenizer.
CONFIG_FILES = frozenset(
    {
        "config.json",
        "generation_config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "tokenizer.model",
        "vocab.json",
        "merges.txt",
        "added_tokens.json",
    }
)
_ERRORS: Mapping[int, type[LauncherError]] = {2: ConfigError, 3: MaterializeError, 4: UnreachableError}
STOP_WAIT_S = 15.0


@dataclass(frozen=True)
class EarlyCheck:
    result: VllmCheckResult  # run_check's outcome, with while_downloading set
    argv: tuple[str, ...]  # the command line it judged


def pending_downloads(plan: Plan, ctx: FetchContext) -> list[tuple[SourceRef, str]]:
    """(source, where it was named) for the target and draft that are remote and not in the cache."""
    out: list[tuple[SourceRef, str]] = []
    for ref, where in ((plan.target.ref, plan.target.chosen_by), (plan.draft.ref if plan.draft else None, "draft")):
        if ref is None or ref.is_local or any(r.uri == ref.uri for r, _ in out):
            continue
        if get_fetcher(ref.scheme).cached(ref, ctx) is None:
            out.append((ref, where))
    return out


def check_while_downloading(
    plan: Plan,
    ctx: FetchContext,
    replan: Callable[[dict[str, SourceFacts]], Plan],
    log_format: LogFormat,
    log: Callable[[str], None],
) -> EarlyCheck | None:
    """Run the vLLM check on the sources' small files while a child downloads the weights; None when
    there is nothing to download or the small files cannot be read first (the caller checks later).
    The child is given `ctx` (its environment: the backends' credentials) and `log_format`, whose secrets are
    masked in vLLM's words."""
    pending = pending_downloads(plan, ctx)
    if not pending or ctx.offline:
        return None
    scratch = Path(tempfile.mkdtemp(prefix="nim-specdec-configs-"))
    try:
        known: dict[str, SourceFacts] = {}
        for ref, where in pending:
            try:
                local = get_fetcher(ref.scheme).fetch_only(ref, ctx, CONFIG_FILES, scratch)
            except LauncherError as err:
                log(
                    f"vLLM check after the download: {ref.uri}'s config.json could not be read first ({err.one_line()})"
                )
                return None
            known[ref.uri] = SourceFacts(str(local), read_config(local, where))
        early = replan(known)
        view = early.with_local_dirs(
            target_dir=known[early.target.ref.uri].local_dir
            if early.target.ref is not None and early.target.ref.uri in known
            else None,
            draft_dir=known[early.draft.ref.uri].local_dir
            if early.draft is not None and early.draft.ref.uri in known
            else None,
        )
        child = _Download([ref for ref, _ in pending], ctx, log_format)
        log(f"vLLM check while downloading {', '.join(ref.uri for ref, _ in pending)}")
        try:
            result = run_check(check_request(view), log_format.secrets, warn=log)
        except BaseException:
            child.stop()
            raise
        child.wait()
        return EarlyCheck(replace(result, while_downloading=True), early.launch.argv)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


CHILD_MODULE = "nim_specdec.launch.early_check.download_child"
REPORT_LIMIT = 64 * 1024  # one line, the error message; a pipe holds that much without blocking its writer


class _Download:
    """launch/early_check/download_child.py in its own process group, tied to this process's life; its refusal (one JSON
    line on a pipe of its own) becomes this process's error. Its log lines go to the stderr both share."""

    def __init__(self, refs: Sequence[SourceRef], ctx: FetchContext, log_format: LogFormat) -> None:
        self.report, report_w = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", CHILD_MODULE],
                env=dict(ctx.env),  # the backends' credentials and endpoints, as the settings were parsed
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                pass_fds=(report_w,),
                start_new_session=True,
                preexec_fn=die_with_parent(signal.SIGTERM),
            )
        finally:
            os.close(report_w)
        assert self.proc.stdin is not None
        try:
            # The context without its loggers (the child logs with its own, in `log_format`).
            self.proc.stdin.write(pickle.dumps((tuple(refs), ctx.quiet(), log_format, report_w)))
            self.proc.stdin.close()
        except BrokenPipeError:  # it ended at once: wait() reports how
            pass

    def wait(self) -> None:
        code = self.proc.wait()
        with os.fdopen(self.report, "rb") as pipe:
            report = pipe.read(REPORT_LIMIT)
        if code == 0:
            return
        try:
            message = str(json.loads(report.decode(errors="replace"))["error"])
        except (ValueError, KeyError, TypeError):
            message = ""
        error = _ERRORS.get(code, MaterializeError)
        raise error("", message or f"the download process ended with exit code {code}")

    def stop(self) -> None:
        stop_group(self.proc, grace_s=STOP_WAIT_S)
        os.close(self.report)


def with_early_result(plan: Plan, early: EarlyCheck | None) -> Plan:
    return plan if early is None else replace(plan, vllm_check=early.result)
