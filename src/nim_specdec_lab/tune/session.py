"""One `tune` session: a first round over the lineup, the model's choice, then rounds over what is left.

Round 1: speculation off, each candidate at its largest K, and a draft model's server at K = 0 everywhere
(what K = 0 in its schedule costs; it only feeds the fit). Before any candidate is served, a model-free
method whose simulated acceptance cannot beat off is left out; after its first server, a candidate far
below off is dropped (tune.lineup.pruning). The cost model is fitted on the rest and chooses; its choice, unless it
is exactly a configuration already served, is measured in round 1 too. Rounds 2 to `--rounds` serve off and
the candidates not dropped, rotated (tune.runs.rounds.order_of); after each, one whose interval shows it slower
than off, or than the leader by the margin, is dropped (tune.lineup.pruning). The recommendation is decided on the
paired rounds (tune.deciding.decide), every candidate served counted in its family, and the choice's prediction is
judged at concurrencies its fit did not see (tune.deciding.verification).

Every server, before it is measured, gets the same prompt pass: every captured request once, greedy, with
the token ids returned (servers.record_token_ids). Off's round-1 server keeps those ids for the simulators;
on the others the pass only warms up. So no measured server inherits a warmer prefix cache than another:
with prefix caching on (vLLM's default), a pass that only one server ran would let its measured runs find
every prompt cached.

tune() runs these as named stages over one TuneState, a frozen value each stage returns replaced: prepared (all
that is checked before any server starts), baseline (off's round-1 server), screened (round 1 over the lineup),
fitted (the cost model's choice, served if new), confirmed (rounds 2 to --rounds), then the decision and its
files. What the servers measured (the run table, each server's start) is the shell's record, kept by Bench.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from nim_specdec.engines.vllm.release.host_vars import read_vllm_host
from nim_specdec.launch.resolve import plan_for, public
from nim_specdec_lab.ngram.corpus import RecordedRequest
from nim_specdec_lab.ngram.model_runner import installed_vllm, serving_runner
from nim_specdec_lab.replay.aiperf_run import find_aiperf
from nim_specdec_lab.replay.request_acceptance import with_per_request_metrics
from nim_specdec_lab.replay.trace_notes import trace_notes
from nim_specdec_lab.tune.deciding.fitting import MethodRuns, drafted, fitted, held_out_prediction
from nim_specdec_lab.tune.deciding.verification import held_out
from nim_specdec_lab.tune.engines.measured import engine_summary, serving_target
from nim_specdec_lab.tune.engines.serving import without_dropped_schedule
from nim_specdec_lab.tune.lineup import candidates as cand
from nim_specdec_lab.tune.lineup import pruning
from nim_specdec_lab.tune.lineup.confirming import Budget, confirm
from nim_specdec_lab.tune.lineup.simulated import model_free_candidates
from nim_specdec_lab.tune.model.choice import choose
from nim_specdec_lab.tune.runs.measurement import Say, judged_tokens_per_s, server_name
from nim_specdec_lab.tune.runs.rounds import Table
from nim_specdec_lab.tune.servers import (
    ServerLog,
    local_model_dir,
    measure,
    read_trace,
    record_token_ids,
    served,
    served_model,
)
from nim_specdec_lab.tune.session_result import (
    CHOICE,
    FittedChoice,
    Measured,
    Serving,
    Verdict,
    decided,
    lineup_name,
    result_files,
    traffic_weights,
    write_result,
)
from nim_specdec_lab.tune.session_state import (
    Baseline,
    Config,
    Screening,
    Setup,
    TuneOptions,
    TuneState,
    known,
)


@dataclass
class Bench:
    """The shell's record of what the servers measured: every server started and every run taken. It grows as
    servers run (the one record a stage adds to rather than replaces), and serves a configuration for a stage."""

    env: Mapping[str, str]
    options: TuneOptions
    say: Say
    servers: ServerLog = field(default_factory=ServerLog)
    table: Table = field(default_factory=Table)

    def started(self) -> int:
        return len(self.servers.starts)

    def prompt_pass(self, setup: Setup, url: str, model: str, max_len: int | None) -> list[RecordedRequest]:
        run = self.options.run
        return record_token_ids(
            url, setup.captured, model, setup.kmax_all + 1, max(run.concurrencies), max_len, run, self.say
        )

    def serve(self, state: TuneState, name: str, config: Config | None, round_no: int) -> None:
        """Start a server with this speculative config (one of `name`'s rounds), give it the prompt pass every
        server gets, measure it, stop it. A speculating server reports each response's acceptance where vLLM
        can (bench --serve does the same)."""
        setup, base, run = state.setup, known(state.baseline), self.options.run
        label = server_name(name, round_no)
        args = with_per_request_metrics(list(setup.args), config is not None)
        env = cand.candidate_env(self.env, setup.engine, config)
        with served(label, env, args, self.options.out, run, self.servers, self.say) as server:
            self.prompt_pass(setup, server.url, base.model, base.max_len)
            runs = measure(
                server,
                label,
                base.model,
                base.tokenizer,
                setup.bodies,
                self.options.out,
                run,
                self.say,
                base.mean_output,
            )
            self.table.add(name, round_no, runs)

    def screen(self, state: TuneState, name: str) -> TuneState:
        """Drop a configuration whose first server measured far below off (tune.lineup.pruning, rule 2)."""
        weights = known(state.screening).weights
        ratio = pruning.first_round_ratio(self.table.figures("off"), self.table.figures(name), weights)
        if ratio is None or ratio >= pruning.SCREEN:
            return state
        state = replace(state, dropped=state.dropped | {name}, screened=state.screened | {name})
        return state.noted(f"{name} dropped after its first server: {pruning.screened_line(ratio)}", self.say)

    def method_runs(self, state: TuneState, round_no: int) -> dict[str, MethodRuns]:
        # A candidate later rounds did not serve again stands in with its first server.
        table, simulated = self.table, known(state.screening).simulated
        return {
            c.method: MethodRuns(
                c.kmax,
                table.server_runs(lineup_name(c), round_no) or table.server_runs(lineup_name(c), 1),
                table.server_runs(f"{c.method}-k0", 1) if table.has(f"{c.method}-k0") else None,
                simulated.get(c.method),
                c.simulated,
            )
            for c in state.fittable
        }


@dataclass
class Heard:
    """Lines a rule says while a stage runs: each said at once, all kept for the state's notes."""

    say: Say
    lines: list[str] = field(default_factory=list)

    def __call__(self, line: str) -> None:
        self.lines.append(line)
        self.say("tune: " + line)


def trained_candidates(options: TuneOptions, configured: cand.Candidate | None) -> list[cand.Candidate]:
    """The draft `draft train` made, at the K its acceptance.json was measured with."""
    if options.trained_draft is None:
        return []
    from nim_specdec.errors import ConfigError  # noqa: PLC0415 - only with --draft
    from nim_specdec.files.regular_file import read_json_inside  # noqa: PLC0415 - only with --draft

    draft = options.trained_draft.absolute()
    if configured is not None and configured.method == cand.TRAINED_METHOD:
        raise ConfigError(
            "--draft", f"the configured method is {configured.method} already", "tune one eagle3 draft at a time"
        )
    if not (draft / "config.json").is_file():
        raise ConfigError(
            "--draft", f"{draft} has no config.json", "give the draft directory draft train made (OUT/draft)"
        )
    report = draft / "acceptance.json"
    acceptance = read_json_inside(report, draft, 1024 * 1024, ConfigError, "--draft") if report.is_file() else None
    return [
        cand.trained_draft_candidate(str(draft), acceptance if isinstance(acceptance, dict) else None, options.max_k)
    ]


def prepared(env: Mapping[str, str], options: TuneOptions, say: Say) -> TuneState:
    """Everything checked before any server starts: the trace, the configuration (exit 2), AIPerf, a trained
    draft, the runner each candidate would be served with, and the server budget."""
    captured = read_trace(options.trace)
    settings, plan = plan_for(env, list(options.vllm_args))  # a bad configuration stops here, exit 2
    find_aiperf(options.run.aiperf_bin)  # so does a missing AIPerf: all before any server starts
    shown = public(plan, settings.host.secrets)
    configured = cand.configured_candidate(shown["speculative"], shown.get("draft"), options.max_k)
    trained = trained_candidates(options, configured)  # a bad --draft stops here, before any server
    use_v2 = read_vllm_host(env).use_v2_model_runner  # as the plan read it (a bad value stopped there)
    target = serving_target(plan, use_v2, options.serving_platform, options.serving_vllm_version)
    for method in ([configured.method] if configured else []) + [c.method for c in trained] + list(options.methods):
        target.engine_for({"method": method})  # a runner the serving engine would refuse stops here, exit 2
    notes: tuple[str, ...] = ()
    if cand.has_spec_args(options.vllm_args):
        notes += (
            "the --speculative-config argument was replaced while tuning; remove it where you apply "
            "the recommended variables, or it will override them",
        )
    run = options.run
    # The budget, known before any server starts: at most one candidate per method, and a K = 0 server for a
    # configured draft model (tune.lineup.pruning, rule 4).
    most = (1 if configured else 0) + len([m for m in options.methods if not (configured and configured.method == m)])
    zero_k = 1 if configured is not None and not configured.simulated else 0
    sweep_most = 1 + (configured.kmax if configured else 0) + options.max_k * (most - (1 if configured else 0))
    budget = options.max_servers or pruning.default_budget(sweep_most, most, zero_k, run.rounds)
    setup = Setup(
        captured=tuple(captured),
        bodies=tuple(c.payload for c in captured),
        use_v2=use_v2,
        configured=configured,
        trained=tuple(trained),
        target=target,
        engine=cand.engine_keys(settings.speculation.specdec_args),
        args=tuple(cand.strip_spec_args(options.vllm_args)),
        budget=budget,
        kmax_all=max([options.max_k] + ([configured.kmax] if configured else [])),
    )
    state = TuneState(setup, notes=notes)
    short = pruning.budget_line(budget, most, zero_k, run.rounds)
    return state.noted(short, say) if short else state


def baseline(state: TuneState, bench: Bench) -> TuneState:
    """Off's round-1 server: the served model, the prompt pass whose ids feed the simulators, off's runs."""
    setup, options = state.setup, bench.options
    env = cand.candidate_env(bench.env, setup.engine, None)
    with served("off", env, list(setup.args), options.out, options.run, bench.servers, bench.say) as server:
        model, max_len = served_model(server.url)
        tokenizer = local_model_dir(bench.env, options.vllm_args)
        base = Baseline(model, max_len, tokenizer, tuple(bench.prompt_pass(setup, server.url, model, max_len)))
        runs = measure(
            server, "off", model, tokenizer, setup.bodies, options.out, options.run, bench.say, base.mean_output
        )
        bench.table.add("off", 1, runs)
    return replace(state, baseline=base)


def screened(state: TuneState, bench: Bench) -> TuneState:
    """Round 1 over the lineup: a model-free method its simulation shows hopeless is not served; every other
    candidate at its largest K, dropped if far below off, and a draft model's K = 0 server."""
    setup, options, base = state.setup, bench.options, known(state.baseline)
    # The servers tune measures run here: their platform (and env) decides the n-gram drafter.
    model_free, simulated = model_free_candidates(
        base.records,
        options.methods,
        options.max_k,
        setup.configured,
        base.max_len,
        serving_runner(setup.use_v2, *installed_vllm()),  # the servers keep the user's runner choice
    )
    considered = cand.candidate_list(setup.configured, model_free) + list(setup.trained)
    hopeless = pruning.unservable(simulated, options.margin)
    for method, bound in sorted(hopeless.items()):
        state = state.noted(f"{method} not served: {pruning.hopeless_line(bound, options.margin)}", bench.say)
    weights, _ = traffic_weights(setup.captured, bench.table, options.run.concurrencies)
    screening = Screening(
        simulated=simulated,
        hopeless=hopeless,
        sweep=pruning.sweep_servers([c.kmax for c in considered]),
        candidates=tuple(c for c in considered if c.method not in hopeless),
        weights=weights,
    )
    state = replace(state, screening=screening)
    for candidate in screening.candidates:
        at_kmax, at_zero = lineup_name(candidate), f"{candidate.method}-k0"
        state = state.served_as(at_kmax, candidate.config)
        bench.serve(state, at_kmax, candidate.config, 1)
        state = bench.screen(state, at_kmax)
        if at_kmax not in state.dropped and not candidate.simulated and drafted(bench.table.server_runs(at_kmax, 1)):
            # What K = 0 in this draft's schedule costs (its first pass still runs): measured, not assumed.
            # Round 1 only: it feeds the fit and is never recommended.
            bench.serve(state, at_zero, cand.zero_k_config(candidate), 1)
    return state


def fitted_choice(state: TuneState, bench: Bench) -> TuneState:
    """The cost model fitted on round 1 and its choice, never a schedule the serving engine would drop; the
    choice is served in round 1 too unless it is exactly a configuration already served."""
    table, run, margin, say = bench.table, bench.options.run, bench.options.margin, bench.say
    screening = known(state.screening)
    # A model-free method is predicted from its simulator only (one configured but left out of --methods: not).
    fittable = tuple(
        c
        for c in screening.candidates
        if (not c.simulated or c.method in screening.simulated) and lineup_name(c) not in state.dropped
    )
    state = replace(state, fittable=fittable)
    model_fit, curves = fitted(table.server_runs("off", 1), bench.method_runs(state, 1))
    by_method = {c.method: c for c in fittable if c.method in curves}
    notes = [
        f"{c.method} drafted nothing on the server; it is not considered" for c in fittable if c.method not in curves
    ]
    for method in by_method:
        if table.has(f"{method}-k0"):
            zero, off = table.kept(f"{method}-k0"), table.kept("off")
            notes.append(
                f"{method} at K = 0 on a server of its own (what K = 0 in its schedule costs): "
                + ", ".join(f"c={c} {judged_tokens_per_s(r):.1f}" for c, r in sorted(zero.items()))
                + " output tokens/s; off: "
                + ", ".join(f"c={c} {judged_tokens_per_s(r):.1f}" for c, r in sorted(off.items()))
            )
    state = replace(state, notes=(*state.notes, *notes))
    choice = choose(model_fit, curves, run.concurrencies, margin)
    say(
        "tune: cost model fitted on round 1; "
        + "; ".join(f"{p.method}: mean predicted speed-up {p.score:.2f}x" for p in choice.plans)
    )
    fallback = None
    if choice.chosen is not None:  # never a schedule the serving engine would drop
        config = cand.scheduled_config(by_method[choice.chosen.method], choice.chosen.ranges())
        choice, fallback = without_dropped_schedule(
            choice,
            state.setup.target.engine_for(config),
            model_fit,
            curves.get(choice.chosen.method),
            run.concurrencies,
        )
    config = cand.scheduled_config(by_method[choice.chosen.method], choice.chosen.ranges()) if choice.chosen else None
    if fallback:
        state = replace(state, notes=(*state.notes, fallback))
        say("tune: " + fallback)
    name = next((n for n, c in state.lineup if c == config), None)
    fit = FittedChoice(model_fit, curves, by_method, choice, config, name or CHOICE, fallback)
    state = replace(state, fit=fit)
    if name is None:
        state = state.served_as(CHOICE, config)
        bench.serve(state, CHOICE, config, 1)
        state = bench.screen(state, CHOICE)
    return state


def confirmed(state: TuneState, bench: Bench) -> TuneState:
    """Rounds 2 to --rounds: off and the contenders not dropped, rotated, each dropped on its interval."""
    fit, run, say = known(state.fit), bench.options.run, bench.say
    configs = dict(state.lineup)
    contenders = [n for n, config in state.lineup if config is not None and n not in state.dropped]
    say(
        f"tune: the model's choice is '{fit.name}'; round 1 served "
        + ", ".join(n for n, _ in state.lineup)
        + (f"; rounds 2 to {run.rounds} serve off and " + ", ".join(contenders) if contenders else "")
    )
    heard = Heard(say)
    dropped = confirm(
        bench.table,
        contenders,
        known(state.screening).weights,
        fit.name,
        Budget(state.setup.budget, run.rounds, bench.options.margin),
        bench.started,
        lambda name, round_no: bench.serve(state, name, configs[name], round_no),
        heard,
    )
    return replace(state, dropped=state.dropped | dropped, notes=(*state.notes, *heard.lines))


def verdict(state: TuneState, bench: Bench) -> Verdict:
    """The decision on the paired rounds, and the choice's prediction judged where its fit did not see."""
    fit, table, run, margin = known(state.fit), bench.table, bench.options.run, bench.options.margin

    def predict(round_no: int, concurrency: int) -> float | None:
        runs = bench.method_runs(state, round_no)
        return held_out_prediction(table.server_runs("off", round_no), runs, fit.config, concurrency)

    held = held_out(fit.name, table.figures(fit.name), predict, margin)
    configured = state.setup.configured
    decision, level = decided(
        state.setup.captured, table, state.lineup, fit.name, configured, run.concurrencies, margin
    )
    if state.screened and all(n in state.screened for n, config in state.lineup if config is not None):
        decision = replace(decision, cannot_tell=False, line=pruning.all_screened_line(sorted(state.screened)))
    return Verdict(decision, level, held, margin)


def written(state: TuneState, bench: Bench, judged: Verdict, started: float) -> dict[str, Any]:
    """tune.json, tune.md and the plots from the state and the verdict; the result returned."""
    setup, base, screening, fit = state.setup, known(state.baseline), known(state.screening), known(state.fit)
    run, say, starts = bench.options.run, bench.say, bench.servers.starts
    decision = judged.decision
    final = None if decision.recommended is None else dict(decision.recommended.config)
    lengths = [len(r.prompt) for r in base.records] if len(base.records) == len(setup.bodies) else None
    shown_notes = trace_notes(list(setup.bodies), True, run.max_tokens, base.max_len, lengths)
    summary, marker = engine_summary(
        starts, setup.target.engine_for(final), None if final is None else final["method"], fit.fallback
    )
    result = result_files(
        judged,
        fit,
        Measured(bench.table, state.lineup, starts, run),
        Serving({**cand.spec_env(setup.engine, final), **marker}, summary),
        state.notes,
        time.monotonic() - started,
    )
    result["trace_notes"] = shown_notes
    result["servers_started"] = len(starts)
    result["sweep_servers"] = screening.sweep
    result["dropped"] = sorted(state.dropped)
    result["not_served"] = {m: round(b, 4) for m, b in sorted(screening.hopeless.items())}
    result["max_servers"] = setup.budget
    say(f"tune: {len(starts)} servers started; a sweep measuring each K once would start {screening.sweep}")
    result["order_by_round"] = bench.table.order_by_round()
    write_result(bench.options.out, result, say)
    for line in summary["differences"]:
        say("tune: serving engine: " + line)
    return result


def tune(env: Mapping[str, str], options: TuneOptions, say: Say) -> dict[str, Any]:
    started = time.monotonic()
    state = prepared(env, options, say)
    bench = Bench(env, options, say)
    state = baseline(state, bench)
    state = screened(state, bench)
    state = fitted_choice(state, bench)
    state = confirmed(state, bench)
    judged = verdict(state, bench)
    say(judged.decision.line)
    return written(state, bench, judged, started)
