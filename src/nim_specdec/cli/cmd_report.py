"""`nim-specdec report`: acceptance rate and length from a live /v1/metrics, or from an AIPerf export.

vLLM's counters, or SGLang's speculative metrics where the scrape holds them (detected by name; reported in
the same units): whichever engine's the text holds, read through engines/registry.py.

    nim-specdec report --url http://localhost:8000/v1/metrics [--save FILE] [--since FILE] [--json]
    nim-specdec report --aiperf-export artifacts/run/server_metrics_export.json [--json]

--save keeps the raw scrape; --since FILE reports the growth since that earlier scrape.
"""

from __future__ import annotations

import argparse
import json

from nim_specdec.config.jsonvalue import loads
from nim_specdec.engines.protocol.serving import CounterReader, result_problem
from nim_specdec.engines.registry import counters_in, serving_for
from nim_specdec.errors import ConfigError, LauncherError, UnreachableError, printable
from nim_specdec.files.output_files import write_atomically
from nim_specdec.files.regular_file import read_regular
from nim_specdec.observe.http_client import request

SCRAPE_TIMEOUT_S = 10.0  # the whole scrape, not each read
SCRAPE_MAX_BYTES = 16 * 1024 * 1024  # a vLLM /metrics page is tens of KB
AIPERF = serving_for("vllm").counters  # AIPerf's export holds vLLM's counters


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--url", help="metrics endpoint, e.g. http://localhost:8000/v1/metrics")
    source.add_argument("--aiperf-export", metavar="FILE", help="AIPerf's server_metrics_export.json")
    parser.add_argument("--since", metavar="FILE", help="an earlier scrape saved with --save: report the growth")
    parser.add_argument("--save", metavar="FILE", help="write this scrape's raw text to FILE")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")


def scrape(url: str, timeout: float = SCRAPE_TIMEOUT_S) -> str:
    answer = request(url, where="--url", deadline=timeout, max_bytes=SCRAPE_MAX_BYTES)
    if answer.status != 200:
        raise UnreachableError("--url", f"{url} answered HTTP {answer.status}", "point at the server's /v1/metrics")
    return answer.text()


# A /metrics scrape or an AIPerf export is a few MB at most.
MAX_INPUT_BYTES = 64 * 1024 * 1024


def _read_text(path: str, option: str) -> str:
    try:
        return read_regular(path, MAX_INPUT_BYTES).decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(option, f"{path} is not UTF-8 text", "give the file the server or AIPerf wrote") from None
    except OSError as err:
        raise ConfigError(option, f"cannot read {path} ({err.strerror or err})", "give an existing file") from None


def _parse(reader: CounterReader, text: str, where: str, error: type[LauncherError] = ConfigError) -> dict:
    try:
        return reader.parse(text)
    except Exception as err:  # noqa: BLE001 - the parser's errors on junk text are of every kind (IndexError too)
        detail = printable(" ".join(str(err).split())[:200])
        raise error(where, f"not Prometheus text ({detail})", "give a /metrics scrape saved with --save") from None


def _parse_prometheus(text: str, where: str, error: type[LauncherError] = ConfigError) -> dict:
    """A scrape read by the reader of whichever engine's counters it holds."""
    return _parse(counters_in(text), text, where, error)


def _load_aiperf(path: str) -> dict:
    data = loads(_read_text(path, "--aiperf-export"), f"--aiperf-export {path}")
    if not isinstance(data, dict):
        raise ConfigError("--aiperf-export", f"{path} holds no metrics object", "give server_metrics_export.json")
    try:
        return AIPERF.parse_aiperf_export(data)  # type: ignore[misc]
    except (ValueError, TypeError, AttributeError) as err:
        detail = printable(" ".join(str(err).split())[:200])
        raise ConfigError(
            "--aiperf-export", f"{path} is not an AIPerf metrics export ({detail})", "give server_metrics_export.json"
        ) from None


def _scraped_report(reader: CounterReader, text: str, since: str | None) -> dict[str, dict]:
    figures = _parse_prometheus(text, "--url", UnreachableError)
    _refuse(reader.problem(figures), "--url")
    if since:
        earlier = _parse(reader, _read_text(since, "--since"), "--since")
        _refuse(reader.problem(earlier), "--since")
        figures = reader.difference(figures, earlier)
        _refuse(reader.problem(figures, since=True), "--since")
    return reader.report(figures)


def _refuse(problem: str | None, where: str) -> None:
    if problem:
        raise UnreachableError(
            where,
            f"the counters cannot be reported: {problem}",
            "scrape again; with --since, save a new scrape after the server restarted",
        )


def _save(path: str, text: str) -> None:
    # Written beside the target and renamed, so an interrupted save never leaves half a scrape behind.
    write_atomically(path, text, "--save")


def run(args: argparse.Namespace) -> int:
    if args.aiperf_export:
        if args.since or args.save:
            raise ConfigError("--aiperf-export", "already holds the growth during the run", "drop --since/--save")
        counters = _load_aiperf(args.aiperf_export)
        _refuse(AIPERF.problem(counters), "--aiperf-export")
        return _print(AIPERF.report(counters), args.json, AIPERF.render_text, "--aiperf-export")
    text = scrape(args.url)
    reader = counters_in(text)
    result = _scraped_report(reader, text, args.since)
    if args.save:
        _save(args.save, text)
    return _print(result, args.json, reader.render_text, "--url")


def _print(result: dict[str, dict], as_json: bool, render, where: str) -> int:
    _refuse(result_problem(result), where)
    if as_json:
        print(json.dumps(result, indent=2, sort_keys=True, allow_nan=False))
    else:
        print(render(result), end="")
    return 0
