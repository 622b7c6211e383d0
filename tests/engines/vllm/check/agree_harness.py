"""Runs one differential case through the launcher (in-process) and through the installed vLLM."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from agree_corpus import Case

from nim_specdec.engines.vllm.check.judge import Verdict, judge, local_paths, serve_args, substitute_paths
from nim_specdec.engines.vllm.check.request import CheckRequest
from nim_specdec.errors import LauncherError
from nim_specdec.launch.check_request import check_request
from nim_specdec.launch.resolve import plan_for
from nim_specdec.launch.workspace import link


@dataclass(frozen=True)
class Outcome:
    case: Case
    refusal: str | None  # the launcher's one-line error, None when it accepted
    exit_code: int
    plan: CheckRequest | None
    executed: Verdict | None  # vLLM on the command line the launcher would exec
    direct: Verdict  # vLLM on the command line the user means

    @property
    def late_failure(self) -> bool:
        return self.refusal is None and self.executed is not None and not self.executed.ok

    @property
    def false_refusal(self) -> bool:
        return self.refusal is not None and self.direct.ok

    @property
    def meaning_changed(self) -> bool:
        """Both run, but vLLM resolves a different method, draft or token count from the two."""
        if self.refusal is not None or not (self.executed and self.executed.ok and self.direct.ok):
            return False
        return _comparable(self.executed.spec, self.case) != _comparable(self.direct.spec, self.case)


def _comparable(spec, case: Case):
    if spec is None:
        return None
    values = dict(spec)
    model = values.get("model")
    for path, local in case.draft_map.items():
        if model == path:
            values["model"] = local
    return tuple(sorted(values.items(), key=lambda kv: kv[0]))


@lru_cache(maxsize=None)
def _judge(args: tuple[str, ...]) -> Verdict:
    return judge(list(args))


def run_case(case: Case, target: str) -> Outcome:
    direct = _judge(("--model", target, *case.direct))
    for link_path, directory in case.earlier_links.items():  # what an earlier start of the launcher left
        cache = Path(case.env["NIM_CACHE_PATH"])
        link(Path(directory), Path(link_path), cache)
    try:
        _, typed = plan_for(dict(case.env), list(case.cli))
        plan = check_request(typed)  # the command vLLM will run, and where each key came from
        if case.earlier_links and typed.draft is not None and typed.draft.name and typed.draft.local_dir:
            # the workspace step serve runs next: link the local draft under its bare name
            workspace = Path(case.env["NIM_WORKSPACE"])
            link(Path(typed.draft.local_dir), workspace / typed.draft.name, Path(case.env["NIM_CACHE_PATH"]))
    except LauncherError as err:
        return Outcome(case, err.one_line(), err.exit_code, None, None, direct)
    args = substitute_paths(serve_args(plan.argv), {**local_paths(plan), **case.draft_map})
    return Outcome(case, None, 0, plan, _judge(tuple(args)), direct)
