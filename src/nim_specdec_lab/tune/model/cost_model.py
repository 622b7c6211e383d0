"""A cost model of one engine step on this hardware, fitted on closed-loop measurements.

    step_s(b, K) = base_s + per_seq_s * b                               (speculation off)
                 + per_step_s + per_step_seq_s * b                      (any step of a speculating server, K = 0 too)
                 + per_k_s * max(K - 1, 0)                              (a draft model's passes after the first)
                 + per_draft_token_s * b * L(K)                         (speculating at K > 0)

b is the batch size (in a closed loop at concurrency c, b = c), L(K) the draft tokens verified per request
per step (acceptance.py). per_draft_token_s is what grows with the tokens verified: the target's extra
work plus a proposer's per-token cost.

The per-step terms are what a server configured to speculate pays at K = 0, which is not speculation off:
- n-gram and suffix servers pay a per-step cost of their own (measured on the CPU: 1.5x the time per output
  token at K = 0). It is not async scheduling's, which the CPU build never uses. On a GPU, vLLM 0.32 turns
  async scheduling off for them on either runner and 0.33 on V1 only (0.33's V2, the GPU default, keeps it
  for n-gram; suffix runs on V1): a fit measured on one engine carries that difference to another.
  For these model-free methods, whose proposer's cost does not grow with K, per_step_s is fitted on the
  runs at their largest K.
- A draft model (draft_model, EAGLE3, MTP) still runs its first forward pass at K = 0, over the target's
  new tokens, to keep its KV cache in step (vllm/v1/spec_decode/llm_base_proposer.py, "Dynamic SD decided
  K=0"); measured on the CPU with a draft a quarter of its target: 450 output tokens/s at concurrency 16
  with K = 0 there, against 1024 off, twice what one draft pass explains. So tune measures a draft model's
  K = 0 on a server of its own (a schedule of K = 0 at every batch size) and fits both per-step terms on
  it; per_k_s is then each further sequential pass. Without that measurement the first pass is taken to
  cost what each further one does (per_step_s = per_k_s).
Tokens/s at b is then b * tokens_per_slot(K) / step_s(b, K).

A run measured at concurrency c gives one observed step time: c * tokens_per_slot / tokens_per_s. The two
base terms are fitted on speculation off, then each method's terms on what is left of its runs.
Least squares on relative errors (a 10 ms miss matters more at 20 ms than at 200 ms), coefficients >= 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from nim_specdec_lab.tune.model.acceptance import AcceptanceCurve, slot_figures


@dataclass(frozen=True)
class Observation:
    """One closed-loop run: what the replay measured and the server's counters grew by."""

    concurrency: int
    tokens_per_s: float
    output_tokens: float
    k: int = 0
    accepted: float = 0.0
    draft_tokens: float = 0.0

    def step_s(self) -> float:
        tokens_per_slot, _ = slot_figures(self.output_tokens, self.accepted, self.draft_tokens)
        return self.concurrency * tokens_per_slot / self.tokens_per_s

    def draft_tokens_per_slot(self) -> float:
        return slot_figures(self.output_tokens, self.accepted, self.draft_tokens)[1]


@dataclass(frozen=True)
class MethodCost:
    per_k_s: float  # each sequential draft pass after the first
    per_draft_token_s: float
    per_step_s: float = 0.0  # every step of a speculating server, K = 0 included
    per_step_seq_s: float = 0.0  # the same, per sequence in the batch

    def zero_k_s(self, batch: int) -> float:
        return self.per_step_s + self.per_step_seq_s * batch


@dataclass(frozen=True)
class CostModel:
    base_s: float
    per_seq_s: float
    methods: Mapping[str, MethodCost] = field(default_factory=dict)

    def step_s(self, batch: int, method: str | None, k: int, draft_tokens_per_slot: float) -> float:
        seconds = self.base_s + self.per_seq_s * batch
        if method is not None:
            cost = self.methods[method]
            seconds += cost.zero_k_s(batch) + cost.per_k_s * max(k - 1, 0)
            if k > 0:
                seconds += cost.per_draft_token_s * batch * draft_tokens_per_slot
        return seconds

    def tokens_per_s(self, batch: int, method: str | None, curve: AcceptanceCurve | None, k: int) -> float:
        """Predicted tokens/s at batch size `batch`: method None is a server without speculation; a method
        at K = 0 is its server at a batch size where its schedule drafts nothing."""
        point = curve.at(k) if curve is not None and k > 0 else None
        if point is None:
            return batch / self.step_s(batch, method, 0, 0.0)
        return batch * point.tokens_per_slot / self.step_s(batch, method, k, point.draft_tokens_per_slot)

    def to_json(self) -> dict:
        return {
            "formula": "step_s = base_s + per_seq_s*b + [speculating] * (per_step_s + per_step_seq_s*b + "
            "per_k_s*max(K-1, 0) + [K>0] * per_draft_token_s*b*L(K)); "
            "tokens_per_s = b * tokens_per_slot(K) / step_s",
            "base_s": self.base_s,
            "per_seq_s": self.per_seq_s,
            "methods": {
                name: {
                    "per_step_s": c.per_step_s,
                    "per_step_seq_s": c.per_step_seq_s,
                    "per_k_s": c.per_k_s,
                    "per_draft_token_s": c.per_draft_token_s,
                }
                for name, c in self.methods.items()
            },
        }


def _nonneg_relative_lstsq(columns: np.ndarray, target: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """min sum(((columns @ x - target) / scale)^2) with x >= 0, by trying every subset of free
    coefficients (two here, so four tries) and keeping the best feasible one."""
    weights = 1.0 / np.maximum(np.abs(scale), 1e-12)
    a, y = columns * weights[:, None], target * weights
    n = columns.shape[1]
    best, best_err = np.zeros(n), float(np.sum(y**2))
    for mask in range(1, 1 << n):
        free = [i for i in range(n) if mask >> i & 1]
        solution, *_ = np.linalg.lstsq(a[:, free], y, rcond=None)
        if np.any(solution < 0):
            continue
        x = np.zeros(n)
        x[free] = solution
        err = float(np.sum((a @ x - y) ** 2))
        if err < best_err - 1e-15:
            best, best_err = x, err
    return best


def fit_base(off: Sequence[Observation]) -> tuple[float, float]:
    """(base_s, per_seq_s) from speculation-off runs at one or more concurrencies."""
    if not off:
        raise ValueError("no speculation-off measurement to fit")
    s = np.array([o.step_s() for o in off])
    return _linear_in_batch(np.array([o.concurrency for o in off], dtype=float), s, s)


def _linear_in_batch(c: np.ndarray, seconds: np.ndarray, scale: np.ndarray) -> tuple[float, float]:
    """(constant, per sequence) >= 0 through (c, seconds); one batch size cannot separate the two terms,
    and gives a flat cost."""
    if len(set(c)) == 1:
        return float(max(np.mean(seconds), 0.0)), 0.0
    constant, per_seq = _nonneg_relative_lstsq(np.stack([np.ones_like(c), c], axis=1), seconds, scale)
    return float(constant), float(per_seq)


def fit_method(
    base_s: float,
    per_seq_s: float,
    runs: Sequence[Observation],
    model_free: bool = False,
    zero_k: Sequence[Observation] = (),
) -> MethodCost:
    """One method's cost terms from its runs at its largest K, and from runs of its server at K = 0
    where there are some (see the module's docstring)."""
    if not runs:
        raise ValueError("no measurement of the method to fit")
    c = np.array([r.concurrency for r in runs], dtype=float)
    verified = c * np.array([r.draft_tokens_per_slot() for r in runs])
    s = np.array([r.step_s() for r in runs])
    left = s - (base_s + per_seq_s * c)
    if zero_k:
        c0 = np.array([r.concurrency for r in zero_k], dtype=float)
        s0 = np.array([r.step_s() for r in zero_k])
        per_step, per_step_seq = _linear_in_batch(c0, s0 - (base_s + per_seq_s * c0), s0)
        left = left - (per_step + per_step_seq * c)
        further = np.array([max(r.k - 1, 0) for r in runs], dtype=float)
        per_k, per_token = _split(further, verified, left, s, c)
        return MethodCost(per_k, per_token, per_step, per_step_seq)
    if model_free:
        per_step, per_token = _split(np.ones_like(c), verified, left, s, c)
        return MethodCost(0.0, per_token, per_step)
    # A draft model without a K = 0 measurement: K passes, the first of them costing what the others do.
    per_pass, per_token = _split(np.array([r.k for r in runs], dtype=float), verified, left, s, c)
    return MethodCost(per_pass, per_token, per_pass)


def _split(
    fixed: np.ndarray, verified: np.ndarray, left: np.ndarray, scale: np.ndarray, c: np.ndarray
) -> tuple[float, float]:
    """(coefficient of `fixed`, per verified token) >= 0 through what is left of the step times."""
    if len(set(c)) == 1 or not np.any(verified > 0):
        # One batch size: the two cannot be separated; put it all where it applies to every batch size
        # (per verified token when there is one, since that is the term K = 0 removes in full).
        total = float(max(np.mean(left), 0.0))
        if np.any(verified > 0):
            return 0.0, total / float(np.mean(verified))
        return total / float(max(np.mean(fixed), 1.0)), 0.0
    if not np.any(fixed > 0):
        (per_token,) = _nonneg_relative_lstsq(verified[:, None], left, scale)
        return 0.0, float(per_token)
    coefficient, per_token = _nonneg_relative_lstsq(np.stack([fixed, verified], axis=1), left, scale)
    return float(coefficient), float(per_token)


def fit(
    off: Sequence[Observation],
    methods: Mapping[str, Sequence[Observation]],
    model_free: frozenset[str] = frozenset(),
    zero_k: Mapping[str, Sequence[Observation]] = {},
) -> CostModel:
    """The base terms from speculation off, then each method's; `model_free` names the methods whose
    proposer costs the same at every K (n-gram, suffix); `zero_k` holds a method's runs at K = 0."""
    base_s, per_seq_s = fit_base(off)
    return CostModel(
        base_s,
        per_seq_s,
        {
            name: fit_method(base_s, per_seq_s, runs, name in model_free, zero_k.get(name, ()))
            for name, runs in methods.items()
        },
    )
