"""tune's decision again from recorded runs, without serving (pure: lines in, a decision out).

RUNS is JSON Lines, one measured run a line:
    {"config": "off", "round": 1, "concurrency": 4, "output_tokens_per_s": 812.5, "position": 1,
     "tokens_per_s_of": "server"}
`"off"` is the baseline. `position` (optional) is the server's place in its round: every run of a server
gives the same, no two servers of a round share one, and the decision counts the rounds each configuration
started (a cold first server is slow: off first in more rounds than a candidate favours the candidate, and
the answer says so). `tokens_per_s_of` (optional) says whose figure the column holds, the server's own
(concurrency x tokens per request / its mean request latency) or the client's; a file holds one or the
other, never both. Several runs of one configuration, round and concurrency (tune's --repeat) stand for
their server by their median, as in tune. Every line is checked whole: a flat object, no key twice, finite
numbers in their ranges, integers where integers belong. tune.json's runs are written in the same form by
`export_lines` (`tune --export-runs`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from nim_specdec.config.jsonvalue import loads
from nim_specdec.errors import ConfigError
from nim_specdec.text.redact import preview
from nim_specdec_lab import stats
from nim_specdec_lab.tune.deciding.decide import Decision, Figures, Option, decide

OFF = "off"
FIELDS = ("config", "round", "concurrency", "output_tokens_per_s", "position", "tokens_per_s_of")
OF = ("server", "client")
MAX_NAME = 200
MAX_ROUND = 10_000
MAX_CONCURRENCY = 1024
# A run's output tokens/s: from one token in 1000 s to 10^9 (past any server). In this range every log ratio
# lies within +-28, so the statistics (in log space) can neither overflow nor vanish.
MIN_TOKENS_PER_S, MAX_TOKENS_PER_S = 1e-3, 1e9
MAX_WEIGHT = 1e9  # a --weights share, of any scale up to this: shares are normalised to sum 1
FORM = '{"config": "off", "round": 1, "concurrency": 4, "output_tokens_per_s": 812.5}'


@dataclass(frozen=True)
class RecordedRun:
    config: str
    round: int
    concurrency: int
    tokens_per_s: float
    position: int | None
    of: str | None = None  # "server" or "client": whose output tokens/s


def _integer(value: Any, key: str, where: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(where, f'"{key}" is {preview(repr(value), 40)}', f"give an integer from {low} to {high}")
    return value


def parse_line(text: str, where: str) -> RecordedRun:
    found = loads(text, where)  # strict JSON: no key twice, finite numbers, nesting bounded before parsing
    if not isinstance(found, dict):
        raise ConfigError(where, f"is not a JSON object ({type(found).__name__})", f"write each run as {FORM}")
    unknown = sorted(set(found) - set(FIELDS))
    if unknown:
        raise ConfigError(
            where,
            f"unknown key {preview(unknown[0], 40)!r}",
            f"use only {', '.join(FIELDS)} (the last two optional)",
        )
    missing = [k for k in FIELDS[:4] if k not in found]
    if missing:
        raise ConfigError(where, f'no "{missing[0]}"', f"write each run as {FORM}")
    name = found["config"]
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME or not name.isprintable():
        raise ConfigError(
            where, f'"config" is {preview(repr(name), 40)}', f"name the configuration in 1 to {MAX_NAME} characters"
        )
    speed = found["output_tokens_per_s"]
    if (
        isinstance(speed, bool)
        or not isinstance(speed, (int, float))
        or not (math.isfinite(speed) and MIN_TOKENS_PER_S <= speed <= MAX_TOKENS_PER_S)
    ):
        raise ConfigError(
            where,
            f'"output_tokens_per_s" is {preview(repr(speed), 40)}',
            f"give the run's output tokens/s, from {MIN_TOKENS_PER_S:g} to {MAX_TOKENS_PER_S:g}",
        )
    position = found.get("position")
    of = found.get("tokens_per_s_of")
    if of is not None and of not in OF:
        raise ConfigError(where, f'"tokens_per_s_of" is {preview(repr(of), 40)}', 'give "server" or "client"')
    return RecordedRun(
        config=name,
        round=_integer(found["round"], "round", where, 1, MAX_ROUND),
        concurrency=_integer(found["concurrency"], "concurrency", where, 1, MAX_CONCURRENCY),
        tokens_per_s=float(speed),
        position=None if position is None else _integer(position, "position", where, 1, MAX_ROUND),
        of=of,
    )


def parse_runs(lines: Iterable[str], source: str) -> list[RecordedRun]:
    runs = [parse_line(line, f"{source} line {n}") for n, line in enumerate(lines, start=1) if line.strip()]
    configs = {r.config for r in runs}
    if OFF not in configs:
        raise ConfigError(source, 'has no run of "off", the baseline', 'add the runs of speculation off as "off"')
    if len(configs) < 2:
        raise ConfigError(source, "has no configuration besides off", "add the runs of a speculating configuration")
    kinds = sorted({r.of for r in runs if r.of is not None})
    if len(kinds) > 1:
        raise ConfigError(
            source, "mixes the server's and the client's tokens/s", "record one of them for every run (tokens_per_s_of)"
        )
    _check_positions(runs, source)
    return runs


def _check_positions(runs: Sequence[RecordedRun], source: str) -> None:
    held: dict[tuple[int, int], str] = {}  # (round, position) -> configuration
    server: dict[tuple[str, int], int] = {}  # (configuration, round) -> position
    for r in runs:
        if r.position is None:
            continue
        if server.setdefault((r.config, r.round), r.position) != r.position:
            raise ConfigError(
                source,
                f"gives {preview(r.config, 40)!r} two positions in round {r.round}",
                "give every run of a server its server's place in the round",
            )
        other = held.setdefault((r.round, r.position), r.config)
        if other != r.config:
            raise ConfigError(
                source,
                f"puts {preview(other, 40)!r} and {preview(r.config, 40)!r} at position {r.position} "
                f"of round {r.round}",
                "give each server of a round its own place",
            )


def first_in_rounds(runs: Sequence[RecordedRun]) -> dict[str, int]:
    """Configuration -> the rounds whose first server it was (where positions were recorded)."""
    out: dict[str, int] = {}
    for config, _round in {(r.config, r.round) for r in runs if r.position == 1}:
        out[config] = out.get(config, 0) + 1
    return dict(sorted(out.items()))


def order_note(runs: Sequence[RecordedRun]) -> str | None:
    """A line where off started more rounds than some candidate served in every round off was: a cold first
    server is slow, which favours the candidates that started fewer (tune's own order never does this:
    tune.runs.rounds). A candidate dropped early (tune.lineup.pruning) shares fewer rounds with off and is left out."""
    first = first_in_rounds(runs)
    if not first:
        return None
    off_rounds = {r.round for r in runs if r.config == OFF}
    served = {n: {r.round for r in runs if r.config == n} for n in {r.config for r in runs} - {OFF}}
    names = sorted(n for n, rounds in served.items() if rounds >= off_rounds)
    behind = [n for n in names if first.get(n, 0) < first.get(OFF, 0)]
    if not behind:
        return None
    rounds = len(off_rounds)
    return (
        f"tune: order: off started {first.get(OFF, 0)} of {rounds} rounds, "
        + ", ".join(f"{n} {first.get(n, 0)}" for n in behind)
        + ": a slow first server favours those that started fewer"
    )


def order_biased(runs: Sequence[RecordedRun]) -> dict[str, str]:
    """The candidates whose order favours them beyond what tune's own allows, each with why: off started two
    or more rounds more than the candidate, of the rounds they share, where it served every round off was.
    tune's rotation (tune.runs.rounds.order_of) keeps every candidate within one first place of off, so that a
    first-server effect p moves its speedup by at most p / R; a file in another order (off first in every
    round) gives a slow first server k x p / R in the candidate's favour, which the interval does not know
    of. Such a candidate is compared and shown, never recommended."""
    first = first_in_rounds(runs)
    if not first:
        return {}
    off_rounds = {r.round for r in runs if r.config == OFF}
    out: dict[str, str] = {}
    for name in sorted({r.config for r in runs} - {OFF}):
        if {r.round for r in runs if r.config == name} < off_rounds:
            continue
        ahead = first.get(OFF, 0) - first.get(name, 0)
        if ahead > 1:
            out[name] = (
                f"off started {first.get(OFF, 0)} of {len(off_rounds)} rounds and {name} {first.get(name, 0)}: "
                f"a slow first server would read as a gain of up to {ahead} x its effect / {len(off_rounds)} "
                "(tune's own order keeps them within one)"
            )
    return out


def figures(runs: Sequence[RecordedRun], config: str) -> Figures:
    """Concurrency -> round -> that server's figure: the median of its runs (the lower middle of an even
    count, as tune.runs.repeats takes it)."""
    grouped: dict[int, dict[int, list[float]]] = {}
    for r in runs:
        if r.config == config:
            grouped.setdefault(r.concurrency, {}).setdefault(r.round, []).append(r.tokens_per_s)
    return {
        c: {n: sorted(values)[(len(values) - 1) // 2] for n, values in sorted(by_round.items())}
        for c, by_round in sorted(grouped.items())
    }


def parse_weights(text: str | None, measured: Sequence[int]) -> dict[int, float]:
    """`C:W,...` over measured concurrencies, normalised to sum 1; None: equal weights."""
    if text is None:
        return {c: 1.0 / len(measured) for c in measured}
    out: dict[int, float] = {}
    fix = "give concurrency:weight pairs such as 1:0.2,4:0.8"
    for part in (p.strip() for p in text.split(",")):
        c, _, w = part.partition(":")
        try:
            concurrency, weight = int(c), float(w)
        except ValueError:
            raise ConfigError("--weights", f"{preview(part, 40)!r} is not concurrency:weight", fix) from None
        if concurrency not in measured:
            raise ConfigError("--weights", f"concurrency {concurrency} was not measured", f"use some of {measured}")
        if concurrency in out:
            raise ConfigError("--weights", f"concurrency {concurrency} is given twice", "give each once")
        if not (math.isfinite(weight) and 0 <= weight <= MAX_WEIGHT):
            raise ConfigError(
                "--weights", f"weight {preview(w, 20)!r} of {concurrency}", f"give a weight from 0 to {MAX_WEIGHT:g}"
            )
        out[concurrency] = weight
    top = max(out.values(), default=0.0)
    if top <= 0:
        raise ConfigError("--weights", f"{preview(text, 60)!r} weighs nothing", "give at least one weight above 0")
    scaled = {c: w / top for c, w in out.items()}  # to at most 1 first, so that tiny weights keep their shares
    total = math.fsum(scaled.values())
    return {c: w / total for c, w in sorted(scaled.items())}


def redecide(runs: Sequence[RecordedRun], weights: Mapping[int, float], margin: float) -> Decision:
    names = sorted({r.config for r in runs} - {OFF})
    biased = order_biased(runs)
    options = [Option(n, {}, figures(runs, n), order=biased.get(n)) for n in names]
    return decide(figures(runs, OFF), options, weights, margin)


def _part(s: stats.Speedup | None) -> dict[str, Any] | None:
    if s is None:
        return None
    found = s.to_json()
    return {k: found[k] for k in ("speedup", "rounds", "verdict", "mde")} | {"interval": found["speedup_interval"]}


def decision_json(
    decision: Decision, weights: Mapping[int, float], margin: float, runs: Sequence[RecordedRun] = ()
) -> dict[str, Any]:
    kinds = {r.of for r in runs if r.of is not None}
    return {
        "first_in_rounds": first_in_rounds(runs),
        "order_note": order_note(runs),
        "order_biased": order_biased(runs),
        "tokens_per_s_of": kinds.pop() if kinds else None,
        "recommended": OFF if decision.recommended is None else decision.recommended.name,
        "cannot_tell": decision.cannot_tell,
        "line": decision.line,
        "recommended_interval": decision.picked_json(),
        "margin": margin,
        "weights": {str(c): round(w, 6) for c, w in sorted(weights.items())},
        "method": stats.METHOD,
        "configurations": {
            c.option.name: {
                "by_concurrency": {str(k): _part(s) for k, s in sorted(c.by_c.items())},
                "traffic": _part(c.traffic),
                "mde": None if c.traffic is None else _part(c.traffic)["mde"],
            }
            for c in decision.comparisons
        },
    }


def export_lines(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """tune.json's runs of its lineup (what the decision weighs: a draft's K = 0 server only fed the fit) in
    the form --decide reads, one definition for the whole column: the server's own tokens/s where every run
    has it (what tune judges on), else the client's for every run, and `tokens_per_s_of` says which. Runs
    that carry neither (an older tune.json: only the judged figure) keep that figure, unlabelled."""
    lineup = set(result.get("lineup") or ())
    runs = [run for run in result.get("runs") or () if run.get("configuration") in lineup]
    if runs and all(run.get("server_tokens_per_s") is not None for run in runs):
        key, of = "server_tokens_per_s", "server"
    elif runs and all(run.get("output_tokens_per_s") is not None for run in runs):
        key, of = "output_tokens_per_s", "client"
    else:
        key, of = "judged_tokens_per_s", None
    return [
        {
            "config": run["configuration"],
            "round": run["round"],
            "concurrency": run["concurrency"],
            "output_tokens_per_s": run[key],
            **({"position": run["position"]} if run.get("position") is not None else {}),
            **({"tokens_per_s_of": of} if of is not None else {}),
        }
        for run in runs
    ]
