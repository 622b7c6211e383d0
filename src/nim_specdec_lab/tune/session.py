"""One `tune` session: measure off and every candidate, fit, choose, verify, write the files.

Servers, in order: speculation off (also records the greedy token ids the simulators need), each
candidate at its largest K (a draft model's also at K = 0 everywhere: what K = 0 in its schedule costs),
the same again for each further pass of `--servers`, then the recommendation (on as many servers) unless
it is exactly something already measured.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from nim_specdec.launch.resolve import plan_for, public
from nim_specdec_lab.tune import candidates as cand
from nim_specdec_lab.specbench.trace_notes import trace_notes
from nim_specdec_lab.tune.acceptance import AcceptanceCurve, curve_from_positions
from nim_specdec_lab.tune.choice import DEFAULT_MARGIN, choose
from nim_specdec_lab.tune.cost_model import Observation, fit
from nim_specdec_lab.tune.measured import engine_summary, serving_target
from nim_specdec_lab.tune.repeats import later_passes
from nim_specdec_lab.tune.report import (
    build_result,
)
from nim_specdec_lab.tune.runner import (
    Round,
    RunSettings,
    Say,
    ServerLog,
    judged_tokens_per_s,
    keep,
    local_model_dir,
    measure,
    read_trace,
    record_token_ids,
    served,
    served_model,
    server_name,
)
from nim_specdec_lab.tune.serving import without_dropped_schedule
from nim_specdec_lab.tune.session_result import (
    already_measured,
    chosen_entry,
    config_rows,
    final_answer,
    last_word,
    pool_of,
    predicted_grid,
    server_names,
    write_result,
)


@dataclass(frozen=True)
class TuneOptions:
    trace: Path
    out: Path
    run: RunSettings
    vllm_args: tuple[str, ...] = ()
    max_k: int = 4
    margin: float = DEFAULT_MARGIN
    methods: tuple[str, ...] = cand.MODEL_FREE
    serving_platform: str | None = None  # None: this machine's
    serving_vllm_version: str | None = None  # None: the installed vLLM


def _observations(runs: Mapping[int, Any], k: int) -> list[Observation]:
    out = []
    for c, r in sorted(runs.items()):
        spec = r.spec
        out.append(
            Observation(
                c,
                judged_tokens_per_s(r),
                float(r.output_tokens),
                k if spec else 0,
                spec.accepted if spec else 0.0,
                spec.draft_tokens if spec else 0.0,
            )
        )
    return out


def _drafted(rounds: Mapping[int, Sequence[Round]]) -> bool:
    return any(r.run.spec is not None and r.run.spec.draft_tokens > 0 for found in rounds.values() for r in found)


def _counter_curve(runs: Mapping[int, Any]) -> AcceptanceCurve | None:
    """Per-position acceptance of a model draft, summed over every concurrency it ran at; None where it
    drafted nothing."""
    specs = [r.spec for r in runs.values() if r.spec is not None]
    width = max((len(s.per_position) for s in specs), default=0)
    per_pos = [sum(s.per_position[i] for s in specs if i < len(s.per_position)) for i in range(width)]
    try:
        return curve_from_positions(
            per_pos,
            sum(s.drafts for s in specs),
            sum(r.output_tokens for r in runs.values() if r.spec is not None),
            sum(s.accepted for s in specs),
        )
    except ValueError:
        return None


def _model_free(
    records: list,
    options: TuneOptions,
    configured: cand.Candidate | None,
    max_len: int | None,
    ngram_runner: str = "v1",
):
    """Model-free candidates and their simulated acceptance curves (n-gram's as `ngram_runner` drafts)."""
    from nim_specdec_lab.tune.simulated import ngram_curve, pick_ngram_lookup, suffix_curve  # noqa: PLC0415

    found, curves = [], {}
    if "ngram" in options.methods:
        if configured is not None and configured.method == "ngram":
            ngram = configured
        else:
            lo, hi = pick_ngram_lookup(records, options.max_k, max_len, ngram_runner)
            ngram = cand.Candidate("ngram", cand.ngram_config(options.max_k, lo, hi), configured=False)
        found.append(ngram)
        curves["ngram"] = ngram_curve(
            records,
            ngram.kmax,
            int(ngram.config.get("prompt_lookup_min") or 1),
            int(ngram.config["prompt_lookup_max"]),
            max_len,
            ngram_runner,
        )
    if "suffix" in options.methods:
        suffix = (
            configured
            if configured is not None and configured.method == "suffix"
            else cand.Candidate("suffix", cand.suffix_config(options.max_k), configured=False)
        )
        found.append(suffix)
        curves["suffix"] = suffix_curve(records, suffix.config, max_len)
    return found, curves


def tune(env: Mapping[str, str], options: TuneOptions, say: Say) -> dict[str, Any]:
    started = time.monotonic()
    from nim_specdec_lab.replay.aiperf_run import find_aiperf  # noqa: PLC0415

    captured = read_trace(options.trace)
    bodies = [c.payload for c in captured]
    settings, plan = plan_for(env, list(options.vllm_args))  # a bad configuration stops here, exit 2
    find_aiperf(options.run.aiperf_bin)  # so does a missing AIPerf: all before any server starts
    shown = public(plan, settings.host.secrets)
    configured = cand.configured_candidate(shown["speculative"], shown.get("draft"), options.max_k)
    target = serving_target(shown, env, options.serving_platform, options.serving_vllm_version)
    for method in ([configured.method] if configured else []) + list(options.methods):
        target.engine_for({"method": method})  # a runner the serving engine would refuse stops here, exit 2
    engine = cand.engine_keys(env)
    args = cand.strip_spec_args(options.vllm_args)
    notes: list[str] = []
    if cand.has_spec_args(options.vllm_args):
        notes.append(
            "the --speculative-config argument was replaced while tuning; remove it where you apply "
            "the recommended variables, or it will override them"
        )
    servers = ServerLog()
    out, run = options.out, options.run
    kmax_all = max([options.max_k] + ([configured.kmax] if configured else []))

    # Every configuration's rounds, over all its servers; `order` is pass 1's, which later passes
    # repeat, so that a slow stretch of a shared machine falls on every configuration alike.
    pooled: dict[str, dict[int, list[Round]]] = {}
    order: list[tuple[str, Mapping[str, Any] | None]] = [("off", None)]

    def pool(name: str, rounds: Mapping[int, list[Round]]) -> Mapping[int, list[Round]]:
        for c, found in rounds.items():
            pooled.setdefault(name, {}).setdefault(c, []).extend(found)
        return rounds

    with served("off", cand.server_env(env, engine, None), args, out, run, servers, say) as server:
        model, max_len = served_model(server.url)
        tokenizer = local_model_dir(env, options.vllm_args)
        records = record_token_ids(server.url, captured, model, kmax_all + 1, max(run.concurrencies), max_len, run, say)
        mean_output = sum(len(r.output) for r in records) / len(records)
        pool("off", measure(server, "off", model, tokenizer, bodies, out, run, say, mean_output))

    def measured_on(name: str, config: Mapping[str, Any] | None, server_no: int = 1) -> Mapping[int, list[Round]]:
        """Start a server with this speculative config, measure it, stop it."""
        label = server_name(name, server_no)
        with served(label, cand.server_env(env, engine, config), args, out, run, servers, say) as server:
            return pool(name, measure(server, label, model, tokenizer, bodies, out, run, say, mean_output))

    # The servers tune measures run here: their platform (and env) decides the n-gram drafter.
    from nim_specdec_lab.ngram.model_runner import installed_vllm, serving_runner  # noqa: PLC0415

    model_free, curves = _model_free(
        records, options, configured, max_len, serving_runner(cand.server_env(env, engine, None), *installed_vllm())
    )
    candidates = cand.candidate_list(configured, model_free)
    for candidate in candidates:
        at_kmax, at_zero = server_names(candidate)
        order.append((at_kmax, candidate.config))
        rounds = measured_on(at_kmax, candidate.config)
        if not candidate.simulated and _drafted(rounds):
            # What K = 0 in this draft's schedule costs (its first pass still runs): measured, not assumed.
            order.append((at_zero, cand.zero_k_config(candidate)))
            measured_on(at_zero, cand.zero_k_config(candidate))
    for server_no, (name, config) in later_passes(order, run.servers):
        measured_on(name, config, server_no)

    measured: dict[str, dict[int, Any]] = {"off": keep(servers, "off", pooled["off"])}
    zero_k: dict[str, dict[int, Any]] = {}
    for candidate in candidates:
        at_kmax, at_zero = server_names(candidate)
        measured[candidate.method] = keep(servers, at_kmax, pooled[at_kmax])
        if candidate.simulated:
            continue
        curve = _counter_curve(measured[candidate.method]) if at_zero in pooled else None
        if curve is None:
            notes.append(f"{candidate.method} drafted nothing on the server; it is not considered")
            continue
        curves[candidate.method] = curve
        zero_k[candidate.method] = keep(servers, at_zero, pooled[at_zero])

    by_method = {c.method: c for c in candidates if c.method in curves}
    model_fit = fit(
        _observations(measured["off"], 0),
        {m: _observations(measured[m], by_method[m].kmax) for m in by_method},
        frozenset(m for m in by_method if by_method[m].simulated),
        {m: _observations(runs, 0) for m, runs in zero_k.items() if m in by_method},
    )
    for method, runs in zero_k.items():
        notes.append(
            f"{method} at K = 0 on a server of its own (what K = 0 in its schedule costs): "
            + ", ".join(f"c={c} {judged_tokens_per_s(r):.1f}" for c, r in sorted(runs.items()))
            + " output tokens/s; off: "
            + ", ".join(f"c={c} {judged_tokens_per_s(r):.1f}" for c, r in sorted(measured["off"].items()))
        )
    choice = choose(model_fit, {m: curves[m] for m in by_method}, run.concurrencies, options.margin)
    say(
        "tune: cost model fitted; "
        + "; ".join(f"{p.method}: mean predicted speed-up {p.score:.2f}x" for p in choice.plans)
    )

    rec_config = (
        cand.scheduled_config(by_method[choice.chosen.method], choice.chosen.ranges()) if choice.chosen else None
    )
    fallback = None
    if rec_config is not None:  # never a schedule the serving engine would drop
        choice, fallback = without_dropped_schedule(
            choice, target.engine_for(rec_config), model_fit, curves.get(choice.chosen.method), run.concurrencies
        )
        rec_config = (
            cand.scheduled_config(by_method[choice.chosen.method], choice.chosen.ranges()) if (choice.chosen) else None
        )
    if fallback:
        notes.append(fallback)
        say("tune: " + fallback)
    reused = already_measured(rec_config, candidates)
    if reused is not None:
        notes.append(f"the recommendation is exactly the measured '{reused}' configuration; its runs verify it")
        measured["recommended"] = measured[reused]
    else:
        for server_no in range(1, run.servers + 1):
            measured_on("recommended", rec_config, server_no)
        measured["recommended"] = keep(servers, "recommended", pooled["recommended"])

    rows = config_rows(candidates, by_method, curves, model_fit, choice, measured, run.concurrencies, rec_config)
    predicted_config = rec_config
    rows, rec_config = last_word(rows, run.concurrencies, notes)
    score = choice.chosen.score if choice.chosen and rec_config == predicted_config else None
    chosen_json = chosen_entry(rec_config, score)
    final = final_answer(captured, pooled, pool_of(rec_config, candidates, pooled), options.margin)
    prompts = [len(r.prompt) for r in records] if len(records) == len(bodies) else None
    shown_notes = trace_notes(bodies, True, run.max_tokens, max_len, prompts)
    summary, marker = engine_summary(
        servers.starts, target.engine_for(rec_config), None if rec_config is None else rec_config["method"], fallback
    )
    result = build_result(
        recommended_env={**cand.spec_env(engine, rec_config), **marker},
        chosen=chosen_json,
        rows=rows,
        concurrencies=run.concurrencies,
        cost_model=model_fit.to_json(),
        acceptance={m: curves[m].to_json() for m in by_method},
        methods=[
            {
                "method": p.method,
                "score": round(p.score, 4),
                "k_by_batch_size": list(p.k_by_batch),
                "predicted_by_k": predicted_grid(model_fit, p.method, curves[p.method], max(run.concurrencies)),
            }
            for p in choice.plans
        ],
        servers=servers.starts,
        runs=servers.rounds,
        repeat=run.repeat,
        servers_per_configuration=run.servers,
        notes=notes,
        duration_s=time.monotonic() - started,
        engine=summary,
    )
    result.update(answer=final, trace_notes=shown_notes)
    write_result(out, result, say)
    for line in summary["differences"]:
        say("tune: serving engine: " + line)
    return result
