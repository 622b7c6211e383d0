"""tune's verification, out of sample only (pure).

Per concurrency: the recommendation against off with its interval (from the decision), and how far the
cost model's prediction of its own choice landed from the measurement at that concurrency when the fit
did not see it. The fit of round n leaves out every run at that concurrency (off's, the candidates', the
choice's), predicts the choice there, and that prediction meets round n's measurement of the choice:
predicted / measured over the rounds, with its 95% interval (stats.by_position), is the error. A fit on a
configuration's own runs would reproduce them by construction, so no such figure is shown as verification.
It is out of sample for the runs, not for the choice: the schedule predicted was picked by round 1's fit,
which saw every concurrency, the held-out one included (and off's round-1 figures both chose it and pair
with it). The report says so (`choice_saw_it`); only the prediction is refitted without the concurrency.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from nim_specdec_lab import stats
from nim_specdec_lab.tune.deciding.decide import Decision

CHOICE_SAW_IT = (
    "out of sample for the runs, not for the choice: the schedule predicted here was chosen by round 1's "
    "fit, which saw this concurrency"
)
Predict = Callable[[int, int], "float | None"]  # (round, held-out concurrency) -> predicted tokens/s


@dataclass(frozen=True)
class HeldOut:
    prediction_of: str
    predicted: Mapping[int, float]  # round -> predicted by that round's fit without this concurrency
    measured: Mapping[int, float]  # round -> measured
    ratio: stats.Speedup | None  # predicted / measured over the rounds

    def to_json(self) -> dict[str, Any]:
        shift = lambda v: round(v - 1.0, 4)  # noqa: E731
        interval = None if self.ratio is None else self.ratio.interval
        return {
            "prediction_of": self.prediction_of,
            "predicted": {str(r): round(v, 2) for r, v in sorted(self.predicted.items())},
            "measured": {str(r): round(v, 2) for r, v in sorted(self.measured.items())},
            "error": None if self.ratio is None else shift(self.ratio.speedup),
            "error_interval": None if interval is None else [shift(interval[0]), shift(interval[1])],
            "rounds": 0 if self.ratio is None else self.ratio.rounds,
            "choice_saw_it": True,
            "note": CHOICE_SAW_IT,
        }


def held_out(
    name: str, measured: Mapping[int, Mapping[int, float]], predict: Predict, margin: float
) -> dict[int, HeldOut]:
    """`measured`: concurrency -> round -> the judged configuration's figure. A concurrency with nothing
    left to fit on (a sweep of one) gets no prediction and no error."""
    out = {}
    for c, by_round in sorted(measured.items()):
        predicted = {}
        for round_no in sorted(by_round):
            value = predict(round_no, c)
            if value is not None and value > 0:
                predicted[round_no] = value
        out[c] = HeldOut(name, predicted, dict(by_round), stats.by_position(by_round, predicted, margin))
    return out


def verification_rows(
    decision: Decision, held: Mapping[int, HeldOut], concurrencies: Sequence[int]
) -> list[dict[str, Any]]:
    recommended = decision.recommended
    against = None if recommended is None else decision.comparison(recommended.name)
    rows = []
    for c in concurrencies:
        versus = None if against is None else against.by_c.get(c)
        rows.append(
            {
                "concurrency": c,
                "recommended": "off" if recommended is None else recommended.name,
                "recommended_vs_off": None if versus is None else versus.to_json(),
                "held_out": held[c].to_json() if c in held else None,
            }
        )
    return rows
