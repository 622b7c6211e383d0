"""bench: measure speculative decoding on vs off over the same traffic, with AIPerf.

Run it once against the server with speculation off (`--mode off`) and once against the
same model with speculation on (`--mode on`), into the same `--out` directory; one server
at a time is enough. Each run adds its AIPerf artifacts under OUT/runs/MODE/CATEGORY and
rebuilds the comparison: OUT/report.md, OUT/report.json and two PNG plots.

AIPerf drives the load because it is the client the speculative-decoding guide documents:
it replays mooncake_payload captures verbatim, reads SPEED-Bench's per-category files, and
records the growth of the server's spec-decode counters during the run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
from pathlib import Path

from nim_specdec.errors import ConfigError, UnreachableError

SPEED_BENCH_CATEGORIES = (
    "coding humanities math multilingual qa rag reasoning roleplay stem summarization writing".split()
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", help="base URL of the server under test, e.g. http://localhost:8000")
    parser.add_argument("--mode", choices=("on", "off"), help="whether that server speculates")
    data = parser.add_mutually_exclusive_group()
    data.add_argument("--trace", help="mooncake_payload capture to replay (category: the file's stem)")
    data.add_argument("--speed-bench", help="directory prepared by SPEED-Bench's prepare.py (qualitative.jsonl)")
    parser.add_argument("--categories", default=",".join(SPEED_BENCH_CATEGORIES), help="SPEED-Bench categories (comma-separated)")
    parser.add_argument("--model", help="served model name (default: the server's first model)")
    parser.add_argument("--tokenizer", default="builtin", help="tokenizer for AIPerf's token counts: a local directory or 'builtin'")
    parser.add_argument("--concurrency", type=int, default=1, help="requests in flight (default 1)")
    parser.add_argument("--metrics-path", default="/metrics", help="the server's Prometheus path (NIM: /v1/metrics)")
    parser.add_argument("--aiperf", default="aiperf", help="the aiperf executable (default: aiperf on PATH)")
    parser.add_argument("--extra", action="append", default=[], metavar="ARG", help="extra argument for aiperf profile (repeatable)")
    parser.add_argument("--out", default="specbench", help="output directory (default ./specbench)")
    parser.add_argument("--report-only", action="store_true", help="only rebuild the report from OUT")


def _datasets(args: argparse.Namespace) -> list[tuple[str, list[str]]]:
    """(category, aiperf dataset arguments) for each category to run."""
    if args.trace:
        from nim_specdec.tools.ngram.trace import CHAT_PATH, parse_capture

        try:
            with open(args.trace, encoding="utf-8") as src:
                paths = {c.path for c in parse_capture(src)}
        except OSError as err:
            raise ConfigError("--trace", f"cannot read {args.trace} ({err.strerror})", "check the path") from None
        if len(paths) != 1:
            raise ConfigError("--trace", "mixes chat and completion payloads", "capture one endpoint per trace")
        endpoint = "chat" if paths == {CHAT_PATH} else "completions"
        dataset = ["--endpoint-type", endpoint, "--custom-dataset-type", "mooncake_trace", "--input-file", str(Path(args.trace).resolve())]
        return [(Path(args.trace).stem, dataset)]
    if args.speed_bench:
        source = Path(args.speed_bench) / "qualitative.jsonl"
        if not source.is_file():
            raise ConfigError("--speed-bench", f"{source} does not exist", "run SPEED-Bench's prepare.py --output_dir DIR first")
        categories = [c.strip() for c in args.categories.split(",") if c.strip()]
        unknown = sorted(set(categories) - set(SPEED_BENCH_CATEGORIES))
        if unknown or not categories:
            raise ConfigError("--categories", f"unknown categories {unknown}", f"choose from {', '.join(SPEED_BENCH_CATEGORIES)}")
        return [
            (c, ["--endpoint-type", "chat", "--custom-dataset-type", f"speed_bench_{c}", "--input-file", str(source.resolve())])
            for c in categories
        ]
    raise ConfigError("bench", "needs --trace or --speed-bench", "see nim-specdec bench --help")


def _run_aiperf(args: argparse.Namespace, model: str, category: str, dataset: list[str], out: Path) -> None:
    if shutil.which(args.aiperf) is None:
        raise ConfigError("--aiperf", f"{args.aiperf} is not an executable", "install aiperf==0.13.0 or pass its path")
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    base = args.url.rstrip("/")
    cmd = [
        args.aiperf, "profile", "--model", model, "--streaming", "--url", base, *dataset,
        "--tokenizer", args.tokenizer, "--server-metrics", base + args.metrics_path,
        "--concurrency", str(args.concurrency), "--output-artifact-dir", str(out.resolve()), "--ui-type", "none",
        *args.extra,
    ]
    with open(out / "aiperf.log", "wb") as log:
        code = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, check=False).returncode
    if code != 0:
        raise UnreachableError("bench", f"aiperf failed for {category} (exit {code})", f"see {out / 'aiperf.log'}")


def _load(run_dir: Path):
    from nim_specdec.tools.specbench.aiperf_results import PROFILE_JSON, SERVER_METRICS_JSON, parse_run

    profile = json.loads((run_dir / PROFILE_JSON).read_text())
    metrics_file = run_dir / SERVER_METRICS_JSON
    return parse_run(profile, json.loads(metrics_file.read_text()) if metrics_file.is_file() else None)


def build_report(out: Path) -> Path:
    """Rebuild report.md, report.json and the plots from every finished run under OUT/runs."""
    from nim_specdec.tools.ngram.output_files import write_atomically
    from nim_specdec.tools.specbench.plots import write_plots
    from nim_specdec.tools.specbench.aiperf_results import PROFILE_JSON
    from nim_specdec.tools.specbench.table import markdown, rows

    found = {mode: {} for mode in ("on", "off")}
    for mode in found:
        for run_dir in sorted((out / "runs" / mode).glob("*")):
            if (run_dir / PROFILE_JSON).is_file():
                found[mode][run_dir.name] = _load(run_dir)
    if not (found["on"] or found["off"]):
        raise ConfigError("--out", f"no finished runs under {out / 'runs'}", "run bench with --url and --mode first")
    table = rows(found["on"], found["off"])
    write_atomically(str(out / "report.json"), json.dumps({"rows": table}, indent=2) + "\n", "--out")
    write_atomically(str(out / "report.md"), markdown(table), "--out")
    write_plots(table, out)
    return out / "report.md"


def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if not args.report_only:
        if not (args.url and args.mode):
            raise ConfigError("bench", "needs --url and --mode (or --report-only)", "see nim-specdec bench --help")
        datasets = _datasets(args)
        from nim_specdec.tools.ngram.replay import server_model

        model = args.model or server_model(args.url)[0]
        for category, dataset in datasets:
            _run_aiperf(args, model, category, dataset, out / "runs" / args.mode / category)
    print(build_report(out).read_text(), end="")
    return 0
