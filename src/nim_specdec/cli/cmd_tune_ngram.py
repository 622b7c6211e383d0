"""tune-ngram: predict n-gram speculative decoding on captured traffic and recommend a setting.

Replays a mooncake_payload capture greedily against a server running WITHOUT speculation,
records prompt and output token ids, then simulates vLLM's n-gram proposer for a grid of
(num_speculative_tokens, prompt_lookup_min, prompt_lookup_max). No GPU is needed for the
simulation; the replay needs whatever serves the model.
"""

from __future__ import annotations

import argparse
import json
import sys

from nim_specdec.errors import ConfigError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_argument_group("token ids (a capture plus a server, or saved records)")
    source.add_argument("--trace", help="mooncake_payload capture (JSONL of {timestamp, payload})")
    source.add_argument("--url", help="base URL of the server with speculation off, e.g. http://localhost:8000")
    source.add_argument("--model", help="model name to send (default: the server's first model)")
    source.add_argument("--concurrency", type=int, default=4, help="requests in flight during the replay (default 4)")
    source.add_argument("--records", help="simulate token ids saved earlier with --save-records, without a server")
    source.add_argument("--save-records", help="write the recorded token ids to this JSONL file")
    source.add_argument(
        "--current",
        help="the n-gram setting in use now, shown beside the grid: a speculative_config object or a NIM_SPECDEC_ARGS "
        "value (default: $NIM_SPECDEC_ARGS, else what the server at --url runs)",
    )
    grid = parser.add_argument_group("grid and cost model")
    grid.add_argument("--k", default="1-6,8", help="num_speculative_tokens values (default 1-6,8)")
    grid.add_argument("--min", dest="mins", default="1-4", help="prompt_lookup_min values (default 1-4)")
    grid.add_argument("--max", dest="maxes", default="1-5", help="prompt_lookup_max values (default 1-5)")
    grid.add_argument("--max-model-len", type=int, help="model length to simulate (default: what the server reports)")
    grid.add_argument(
        "--verify-cost",
        type=float,
        default=None,
        help="cost of verifying one draft token relative to a decode step (default 0.1)",
    )
    out = parser.add_argument_group("output")
    out.add_argument("--top", type=int, default=15, help="rows of the table to print (default 15; 0 = all)")
    out.add_argument("--json", dest="json_out", help="also write the full grid and recommendation as JSON here")


def _current(args: argparse.Namespace):
    """The setting in use now (NgramParams), or None when there is none or it is not n-gram."""
    import os

    from nim_specdec.config.specargs import parse_specdec_args
    from nim_specdec.tools.ngram.grid import ngram_params

    text = args.current or os.environ.get("NIM_SPECDEC_ARGS")
    where = "--current" if args.current else "NIM_SPECDEC_ARGS"
    if text:
        try:
            obj = json.loads(text)
        except ValueError:
            raise ConfigError(where, "is not JSON", 'give e.g. {"method": "ngram", "num_speculative_tokens": 3}') from None
        config = parse_specdec_args(text)[0] if isinstance(obj, dict) and "speculative_config" in obj else obj
        params = ngram_params(config)
        if params is None and args.current:
            raise ConfigError("--current", "is not an n-gram speculative_config", "give method ngram with num_speculative_tokens")
        return params
    if args.url:
        from nim_specdec.observe.smoke import http_get

        status, body = http_get(args.url.rstrip("/") + "/v1/specdec/config", timeout=30)
        if status == 200:
            try:
                return ngram_params(json.loads(body).get("speculative_config"))
            except (ValueError, AttributeError):
                return None
    return None


def _grid(args: argparse.Namespace):
    from nim_specdec.tools.ngram.grid import make_grid, parse_int_set

    sets = {}
    for flag, text in (("--k", args.k), ("--min", args.mins), ("--max", args.maxes)):
        try:
            sets[flag] = parse_int_set(text)
        except ValueError as err:
            raise ConfigError(flag, str(err), "use comma-separated positive integers or ranges, e.g. 1-4,6") from None
    grid = make_grid(sets["--k"], sets["--min"], sets["--max"])
    if not grid:
        raise ConfigError("--min/--max", "no pair with min <= max", "widen --max or lower --min")
    return grid, sets


def _records(args: argparse.Namespace, k_max: int):
    """(records, model length, notes) from saved records or from a replay."""
    from nim_specdec.tools.ngram import replay
    from nim_specdec.tools.ngram.trace import parse_capture

    if args.records:
        if args.trace or args.url:
            raise ConfigError("--records", "given together with --trace/--url", "use either saved records or a replay")
        records, saved_len = replay.load_records(args.records)
        return records, args.max_model_len or saved_len, []
    if not (args.trace and args.url):
        raise ConfigError("tune-ngram", "needs --trace and --url (or --records)", "see nim-specdec tune-ngram --help")
    try:
        with open(args.trace, encoding="utf-8") as src:
            captured = parse_capture(src)
    except OSError as err:
        raise ConfigError("--trace", f"cannot read {args.trace} ({err.strerror})", "check the path") from None
    model, server_len = replay.server_model(args.url)
    # Accepted drafts are counted up to k tokens past a request's end: fetch k + 1 more.
    max_model_len = args.max_model_len or server_len
    replayed = replay.replay(args.url, captured, args.model or model, k_max + 1, args.concurrency, max_model_len)
    failed = [r for r in replayed if r.request is None]
    notes = [f"line {r.line}: {r.error}" for r in failed[:3]]
    if failed:
        notes.insert(0, f"{len(failed)} of {len(replayed)} requests failed and were left out")
    mismatched = sum(r.tail_mismatch for r in replayed)
    if mismatched:
        notes.append(f"{mismatched} requests could not be continued past their end; accepted drafts there are not predicted")
    records = [r.request for r in replayed if r.request is not None]
    if not records:
        raise ConfigError("--url", f"every replayed request failed ({notes[1] if len(notes) > 1 else 'no detail'})", "check the server and the capture")
    if args.save_records:
        replay.save_records(args.save_records, records, max_model_len)
    return records, max_model_len, notes


def run(args: argparse.Namespace) -> int:
    from nim_specdec.tools.ngram.corpus import build_corpus
    from nim_specdec.tools.ngram.grid import DEFAULT_VERIFY_COST, Scored, edge_notes, predicted_speedup, rank
    from nim_specdec.tools.ngram.tune_report import recommendation, summary, table
    from nim_specdec.tools.ngram.output_files import write_atomically
    from nim_specdec.tools.ngram.simulator import simulate

    verify_cost = DEFAULT_VERIFY_COST if args.verify_cost is None else args.verify_cost
    if verify_cost < 0:
        raise ConfigError("--verify-cost", f"{verify_cost} is negative", "use a value >= 0, e.g. 0.1")
    grid, sets = _grid(args)
    current_params = _current(args)
    widest = grid + ([current_params] if current_params else [])
    records, max_model_len, notes = _records(args, max(p.k for p in widest))
    corpus = build_corpus(records, max_ngram=max(p.max_n for p in widest), pad=max(p.k for p in widest) + 1)
    results = [simulate(corpus, p, max_model_len or (1 << 40)) for p in grid]
    ranked = rank(results, verify_cost)
    current = None
    if current_params is not None:
        result = next((s.result for s in ranked if s.result.params == current_params), None)
        result = result or simulate(corpus, current_params, max_model_len or (1 << 40))
        current = Scored(result, predicted_speedup(result, verify_cost))
    edges = edge_notes(ranked[0].result.params, sets["--k"], sets["--min"], sets["--max"])

    for note in notes:
        print(f"nim-specdec: note: {note}", file=sys.stderr)
    print(
        f"{corpus.num_requests} requests, {corpus.prompt_tokens} prompt + {corpus.output_tokens} output tokens; "
        f"{len(grid)} settings; verify cost {verify_cost} per draft token"
    )
    print(table(ranked, None if args.top == 0 else args.top, current))
    print(recommendation(ranked, edges))
    if args.json_out:
        meta = {
            "requests": corpus.num_requests,
            "prompt_tokens": corpus.prompt_tokens,
            "output_tokens": corpus.output_tokens,
            "max_model_len": max_model_len,
            "verify_cost": verify_cost,
        }
        write_atomically(args.json_out, json.dumps(summary(ranked, meta, current, edges), indent=2) + "\n", "--json")
    return 0
