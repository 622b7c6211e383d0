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
the token ids returned (runner.record_token_ids). Off's round-1 server keeps those ids for the simulators;
on the others the pass only warms up. So no measured server inherits a warmer prefix cache than another:
with prefix caching on (vLLM's default), a pass that only one server ran would let its measured runs find
every prompt cached.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping

from nim_specdec.launch.resolve import plan_for, public
from nim_specdec_lab.replay.aiperf_run import find_aiperf
from nim_specdec_lab.ngram.serving_runner import installed_vllm, serving_runner
from nim_specdec_lab.tune.lineup.simulated import model_free_candidates
from nim_specdec_lab.replay.request_acceptance import with_per_request_metrics
from nim_specdec_lab.replay.trace_notes import trace_notes
from nim_specdec_lab.tune.lineup import candidates as cand, pruning
from nim_specdec_lab.tune.model.choice import DEFAULT_MARGIN, choose
from nim_specdec_lab.tune.lineup.confirming import Budget, confirm
from nim_specdec_lab.tune.deciding.fitting import MethodRuns, drafted, fitted, held_out_prediction
from nim_specdec_lab.tune.engines.measured import engine_summary, serving_target
from nim_specdec_lab.tune.runs.rounds import Table
from nim_specdec_lab.tune.runs.measurement import MeasureOptions, Say, judged_tokens_per_s, server_name
from nim_specdec_lab.tune.servers import (
    ServerLog,
    local_model_dir,
    measure,
    read_trace,
    record_token_ids,
    served,
    served_model,
)
from nim_specdec_lab.tune.engines.serving import without_dropped_schedule
from nim_specdec_lab.tune.session_result import (
    CHOICE,
    decided,
    lineup_name,
    result_files,
    traffic_weights,
    write_result,
)
from nim_specdec_lab.tune.deciding.verification import held_out


@dataclass(frozen=True)
class TuneOptions:
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


def tune(env: Mapping[str, str], options: TuneOptions, say: Say) -> dict[str, Any]:
    started = time.monotonic()

    captured = read_trace(options.trace)
    bodies = [c.payload for c in captured]
    settings, plan = plan_for(env, list(options.vllm_args))  # a bad configuration stops here, exit 2
    find_aiperf(options.run.aiperf_bin)  # so does a missing AIPerf: all before any server starts
    shown = public(plan, settings.host.secrets)
    configured = cand.configured_candidate(shown["speculative"], shown.get("draft"), options.max_k)
    trained = trained_candidates(options, configured)  # a bad --draft stops here, before any server
    target = serving_target(plan, settings.use_v2_model_runner, options.serving_platform, options.serving_vllm_version)
    for method in ([configured.method] if configured else []) + [c.method for c in trained] + list(options.methods):
        target.engine_for({"method": method})  # a runner the serving engine would refuse stops here, exit 2
    engine = cand.engine_keys(settings.specdec_args)
    args = cand.strip_spec_args(options.vllm_args)
    notes: list[str] = []
    if cand.has_spec_args(options.vllm_args):
        notes.append(
            "the --speculative-config argument was replaced while tuning; remove it where you apply "
            "the recommended variables, or it will override them"
        )
    servers, table = ServerLog(), Table()
    out, run = options.out, options.run
    # The budget, known before any server starts: at most one candidate per method, and a K = 0 server for a
    # configured draft model (tune.lineup.pruning, rule 4).
    most = (1 if configured else 0) + len([m for m in options.methods if not (configured and configured.method == m)])
    zero_k = 1 if configured is not None and not configured.simulated else 0
    sweep_most = 1 + (configured.kmax if configured else 0) + options.max_k * (most - (1 if configured else 0))
    budget = options.max_servers or pruning.default_budget(sweep_most, most, zero_k, run.rounds)
    short = pruning.budget_line(budget, most, zero_k, run.rounds)
    if short:
        _note(notes, say, short)
    kmax_all = max([options.max_k] + ([configured.kmax] if configured else []))
    lineup: list[tuple[str, Mapping[str, Any] | None]] = [("off", None)]

    def prompt_pass(url: str, served_as: str, max_len: int | None) -> list:
        return record_token_ids(url, captured, served_as, kmax_all + 1, max(run.concurrencies), max_len, run, say)

    with served("off", cand.candidate_env(env, engine, None), args, out, run, servers, say) as server:
        model, max_len = served_model(server.url)
        tokenizer = local_model_dir(env, options.vllm_args)
        records = prompt_pass(server.url, model, max_len)
        mean_output = sum(len(r.output) for r in records) / len(records)
        table.add("off", 1, measure(server, "off", model, tokenizer, bodies, out, run, say, mean_output))

    def serve_round(name: str, config: Mapping[str, Any] | None, round_no: int) -> None:
        """Start a server with this speculative config (one of `name`'s rounds), give it the prompt pass
        every server gets, measure it, stop it. A speculating server reports each response's acceptance
        where vLLM can (bench --serve does the same)."""
        label = server_name(name, round_no)
        server_args = with_per_request_metrics(args, config is not None)
        with served(label, cand.candidate_env(env, engine, config), server_args, out, run, servers, say) as server:
            prompt_pass(server.url, model, max_len)
            table.add(name, round_no, measure(server, label, model, tokenizer, bodies, out, run, say, mean_output))

    # The servers tune measures run here: their platform (and env) decides the n-gram drafter.
    model_free, simulated = model_free_candidates(
        records,
        options.methods,
        options.max_k,
        configured,
        max_len,
        serving_runner(settings.use_v2_model_runner, *installed_vllm()),  # the servers keep the user's runner choice
    )
    considered = cand.candidate_list(configured, model_free) + trained
    sweep = pruning.sweep_servers([c.kmax for c in considered])
    hopeless = pruning.unservable(simulated, options.margin)
    for method, bound in sorted(hopeless.items()):
        _note(notes, say, f"{method} not served: {pruning.hopeless_line(bound, options.margin)}")
    candidates = [c for c in considered if c.method not in hopeless]
    weights, _ = traffic_weights(captured, table, run.concurrencies)
    dropped: set[str] = set()
    screened: set[str] = set()  # dropped after their first server

    def screen(name: str) -> bool:
        """Drop a configuration whose first server measured far below off (tune.lineup.pruning, rule 2)."""
        ratio = pruning.first_round_ratio(table.figures("off"), table.figures(name), weights)
        if ratio is None or ratio >= pruning.SCREEN:
            return False
        dropped.add(name)
        screened.add(name)
        _note(notes, say, f"{name} dropped after its first server: {pruning.screened_line(ratio)}")
        return True

    for candidate in candidates:
        at_kmax, at_zero = lineup_name(candidate), f"{candidate.method}-k0"
        lineup.append((at_kmax, candidate.config))
        serve_round(at_kmax, candidate.config, 1)
        if not screen(at_kmax) and not candidate.simulated and drafted(table.server_runs(at_kmax, 1)):
            # What K = 0 in this draft's schedule costs (its first pass still runs): measured, not assumed.
            # Round 1 only: it feeds the fit and is never recommended.
            serve_round(at_zero, cand.zero_k_config(candidate), 1)

    # A model-free method is predicted from its simulator only (one configured but left out of --methods: not).
    fittable = [c for c in candidates if (not c.simulated or c.method in simulated) and lineup_name(c) not in dropped]

    def method_runs(round_no: int) -> dict[str, MethodRuns]:
        # A candidate later rounds did not serve again stands in with its first server.
        return {
            c.method: MethodRuns(
                c.kmax,
                table.server_runs(lineup_name(c), round_no) or table.server_runs(lineup_name(c), 1),
                table.server_runs(f"{c.method}-k0", 1) if table.has(f"{c.method}-k0") else None,
                simulated.get(c.method),
                c.simulated,
            )
            for c in fittable
        }

    model_fit, curves = fitted(table.server_runs("off", 1), method_runs(1))
    by_method = {c.method: c for c in fittable if c.method in curves}
    for candidate in fittable:
        if candidate.method not in curves:
            notes.append(f"{candidate.method} drafted nothing on the server; it is not considered")
    for method in by_method:
        if table.has(f"{method}-k0"):
            zero, off = table.kept(f"{method}-k0"), table.kept("off")
            notes.append(
                f"{method} at K = 0 on a server of its own (what K = 0 in its schedule costs): "
                + ", ".join(f"c={c} {judged_tokens_per_s(r):.1f}" for c, r in sorted(zero.items()))
                + " output tokens/s; off: "
                + ", ".join(f"c={c} {judged_tokens_per_s(r):.1f}" for c, r in sorted(off.items()))
            )
    choice = choose(model_fit, curves, run.concurrencies, options.margin)
    say(
        "tune: cost model fitted on round 1; "
        + "; ".join(f"{p.method}: mean predicted speed-up {p.score:.2f}x" for p in choice.plans)
    )
    choice_config = (
        cand.scheduled_config(by_method[choice.chosen.method], choice.chosen.ranges()) if choice.chosen else None
    )
    fallback = None
    if choice_config is not None:  # never a schedule the serving engine would drop
        choice, fallback = without_dropped_schedule(
            choice, target.engine_for(choice_config), model_fit, curves.get(choice.chosen.method), run.concurrencies
        )
        choice_config = (
            cand.scheduled_config(by_method[choice.chosen.method], choice.chosen.ranges()) if choice.chosen else None
        )
    if fallback:
        notes.append(fallback)
        say("tune: " + fallback)
    choice_name = next((name for name, config in lineup if config == choice_config), None)
    if choice_name is None:
        choice_name = CHOICE
        lineup.append((CHOICE, choice_config))
        serve_round(CHOICE, choice_config, 1)
        screen(CHOICE)
    configs = dict(lineup)
    contenders = [n for n, config in lineup if config is not None and n not in dropped]
    say(
        f"tune: the model's choice is '{choice_name}'; round 1 served "
        + ", ".join(n for n, _ in lineup)
        + (f"; rounds 2 to {run.rounds} serve off and " + ", ".join(contenders) if contenders else "")
    )
    dropped |= confirm(
        table,
        contenders,
        weights,
        choice_name,
        Budget(budget, run.rounds, options.margin),
        lambda: len(servers.starts),
        lambda name, round_no: serve_round(name, configs[name], round_no),
        lambda line: _note(notes, say, line),
    )

    def predict(round_no: int, concurrency: int) -> float | None:
        return held_out_prediction(
            table.server_runs("off", round_no), method_runs(round_no), choice_config, concurrency
        )

    held = held_out(choice_name, table.figures(choice_name), predict, options.margin)
    decision, level = decided(captured, table, lineup, choice_name, configured, run.concurrencies, options.margin)
    if screened and all(n in screened for n, config in lineup if config is not None):
        decision = replace(decision, cannot_tell=False, line=pruning.all_screened_line(sorted(screened)))
    say(decision.line)
    final = None if decision.recommended is None else dict(decision.recommended.config)
    shown_notes = trace_notes(
        bodies, True, run.max_tokens, max_len, [len(r.prompt) for r in records] if len(records) == len(bodies) else None
    )
    summary, marker = engine_summary(
        servers.starts, target.engine_for(final), None if final is None else final["method"], fallback
    )
    result = result_files(
        decision=decision,
        level=level,
        held=held,
        table=table,
        lineup=lineup,
        choice=choice,
        choice_name=choice_name,
        model_fit=model_fit,
        curves=curves,
        recommended_env={**cand.spec_env(engine, final), **marker},
        servers=servers.starts,
        run=run,
        margin=options.margin,
        notes=notes,
        duration_s=time.monotonic() - started,
        engine=summary,
    )
    result["trace_notes"] = shown_notes
    result["servers_started"] = len(servers.starts)
    result["sweep_servers"] = sweep
    result["dropped"] = sorted(dropped)
    result["not_served"] = {m: round(b, 4) for m, b in sorted(hopeless.items())}
    result["max_servers"] = budget
    say(f"tune: {len(servers.starts)} servers started; a sweep measuring each K once would start {sweep}")
    result["order_by_round"] = table.order_by_round()
    write_result(out, result, say)
    for line in summary["differences"]:
        say("tune: serving engine: " + line)
    return result


def _note(notes: list[str], say: Say, line: str) -> None:
    notes.append(line)
    say("tune: " + line)
