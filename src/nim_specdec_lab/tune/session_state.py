"""The values a tune session passes from stage to stage: its options, what it knows before any server starts,
off's baseline, round 1's screening, and the one immutable state each stage returns replaced."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping, TypeVar

from nim_specdec_lab.ngram.corpus import RecordedRequest
from nim_specdec_lab.ngram.trace import CapturedRequest
from nim_specdec_lab.tune.engines.measured import ServingTarget
from nim_specdec_lab.tune.lineup import candidates as cand
from nim_specdec_lab.tune.model.acceptance import AcceptanceCurve
from nim_specdec_lab.tune.model.choice import DEFAULT_MARGIN
from nim_specdec_lab.tune.runs.measurement import MeasureOptions, Say
from nim_specdec_lab.tune.session_result import FittedChoice

Config = Mapping[str, Any]
T = TypeVar("T")


@dataclass(frozen=True)
class TuneOptions:
    """What `nim-specdec tune` was asked: the trace, where its files go, how each server is measured, the
    user's vLLM arguments, and the lineup's bounds."""

    trace: Path
    out: Path
    run: MeasureOptions
    vllm_args: tuple[str, ...] = ()
    max_k: int = 4
    margin: float = DEFAULT_MARGIN
    methods: tuple[str, ...] = cand.MODEL_FREE
    serving_platform: str | None = None  # None: this machine's
    serving_vllm_version: str | None = None  # None: the installed vLLM
    max_servers: int | None = None  # None: tune.lineup.pruning.default_budget
    trained_draft: Path | None = None  # a draft `draft train` made (OUT/draft), measured as a candidate too


@dataclass(frozen=True)
class Setup:
    """What tune knows before any server starts: the trace, the user's configured candidate and a trained draft,
    the engine the recommendation will serve on, the arguments every server gets, and the server budget."""

    captured: tuple[CapturedRequest, ...]
    bodies: tuple[Mapping[str, Any], ...]
    use_v2: bool | None  # VLLM_USE_V2_MODEL_RUNNER as the user set it; tune's servers keep it
    configured: cand.Candidate | None
    trained: tuple[cand.Candidate, ...]
    target: ServingTarget
    engine: Mapping[str, Any]  # the engine keys of NIM_SPECDEC_ARGS, kept on every server
    args: tuple[str, ...]  # the user's vLLM arguments without a speculative config
    budget: int
    kmax_all: int  # the largest K any candidate drafts: the prompt pass's tail


@dataclass(frozen=True)
class Baseline:
    """Off's round-1 server: the served model's name and length, the tokenizer, and the prompt pass's ids."""

    model: str
    max_len: int | None
    tokenizer: str | None
    records: tuple[RecordedRequest, ...]

    @property
    def mean_output(self) -> float:
        return sum(len(r.output) for r in self.records) / len(self.records)


@dataclass(frozen=True)
class Screening:
    """Round 1's lineup: the model-free methods' simulated curves, those left unserved (with their bound), the
    servers a sweep would start, the candidates served, and each concurrency's weight on the traffic."""

    simulated: Mapping[str, AcceptanceCurve]
    hopeless: Mapping[str, float]
    sweep: int
    candidates: tuple[cand.Candidate, ...]
    weights: Mapping[int, float]


@dataclass(frozen=True)
class TuneState:
    """Everything a stage decided, replaced (never changed) by the next one."""

    setup: Setup
    notes: tuple[str, ...] = ()
    lineup: tuple[tuple[str, Config | None], ...] = (("off", None),)
    dropped: frozenset[str] = frozenset()
    screened: frozenset[str] = frozenset()  # dropped after their first server
    baseline: Baseline | None = None
    screening: Screening | None = None
    fittable: tuple[cand.Candidate, ...] = ()  # the candidates the cost model is fitted on, fixed after round 1
    fit: FittedChoice | None = None

    def noted(self, line: str, say: Say) -> TuneState:
        say("tune: " + line)
        return replace(self, notes=(*self.notes, line))

    def served_as(self, name: str, config: Config | None) -> TuneState:
        return replace(self, lineup=(*self.lineup, (name, config)))


def known(value: T | None) -> T:
    # A stage reads what an earlier stage set; tune() runs them in order, so None here is a bug, not an input.
    assert value is not None, "a tune stage ran before the stage it reads"
    return value
