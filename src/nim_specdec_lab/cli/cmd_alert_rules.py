"""alert-rules: Prometheus alerts for one served model from a tune.json (what live acceptance should be).

    nim-specdec alert-rules tune-out/tune.json --model-name meta/llama-3.1-8b-instruct [--configuration NAME]
        [--format prometheusrule|rules] [--namespace nim-specdec] [--window 15m] [--min-drafts 200] [--out FILE]

Alerts on tune's recommendation (or the measured configuration named) when live acceptance length falls below
the lower bound of tune's interval, when drafts stop while requests flow, and when a pod serves the model
without speculation (nim_specdec_lab/tune/reporting/alert_rules.py). `prometheusrule` is the Prometheus Operator's
resource; `rules` a plain rules file for `rule_files:`. docs/alerts.md says what to do when each fires.
"""

from __future__ import annotations

import argparse
import re

import yaml

from nim_specdec.config.jsonvalue import loads_object
from nim_specdec.errors import ConfigError, printable
from nim_specdec.files.output_files import write_atomically
from nim_specdec.files.regular_file import read_regular
from nim_specdec_lab.tune.reporting.alert_rules import DURATION, alert_group, expected_for, prometheus_rule, rules_file

MAX_TUNE_JSON = 256 * 1024 * 1024  # runs with per-request acceptance; far above what a tune writes
FORMATS = ("prometheusrule", "rules")


class _Dumper(yaml.SafeDumper):
    """Expressions of several lines as YAML blocks, as one writes rules by hand."""


_Dumper.add_representer(
    str,
    lambda dumper, text: dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|" if "\n" in text else None),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("tune_json", metavar="TUNE_JSON", help="the tune.json `nim-specdec tune` wrote")
    parser.add_argument("--model-name", required=True, help="the served model name (the pods' model_name label)")
    parser.add_argument("--configuration", help="a measured configuration to alert for (default: the recommended)")
    parser.add_argument("--format", choices=FORMATS, default="prometheusrule", help="default prometheusrule")
    parser.add_argument("--namespace", default="nim-specdec", help="the PrometheusRule's namespace")
    parser.add_argument("--window", default="15m", help="acceptance window and how long it must stay low (15m)")
    parser.add_argument("--min-drafts", type=int, default=200, help="drafts the window needs to judge (200)")
    parser.add_argument("--out", help="write the rules to FILE instead of printing them")


def _load(path: str) -> dict:
    try:
        text = read_regular(path, MAX_TUNE_JSON).decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError("TUNE_JSON", f"{path} is not UTF-8 text", "give the tune.json tune wrote") from None
    except OSError as err:
        raise ConfigError("TUNE_JSON", f"cannot read {path} ({err.strerror or err})", "give an existing file") from None
    return loads_object(text, f"TUNE_JSON {path}")


def _checked(args: argparse.Namespace) -> None:
    name = args.model_name
    if not name or not name.isprintable() or len(name) > 512:
        shown = printable(name[:80]) or "(empty)"
        raise ConfigError("--model-name", f"{shown!r} is not a served model name", "give the name the pods serve")
    if not DURATION.match(args.window):
        shown = printable(args.window[:40])
        raise ConfigError("--window", f"{shown!r} is not a duration", "write it as 15m, 900s or 1h")
    if not re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", args.namespace):
        raise ConfigError("--namespace", f"{printable(args.namespace[:80])!r} is not a namespace", "e.g. nim-specdec")
    if args.min_drafts < 1:
        raise ConfigError("--min-drafts", f"{args.min_drafts} is below 1", "give a positive count, e.g. 200")


def run(args: argparse.Namespace) -> int:
    _checked(args)
    try:
        expected = expected_for(_load(args.tune_json), args.configuration)
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise ConfigError(
            "TUNE_JSON", f"{args.tune_json} is not a tune.json ({printable(str(err)[:120])})", "give tune's own file"
        ) from None
    group = alert_group(args.model_name, expected, args.window, args.min_drafts)
    document = rules_file(group) if args.format == "rules" else prometheus_rule(group, args.model_name, args.namespace)
    text = yaml.dump(document, Dumper=_Dumper, sort_keys=False, width=120)
    if args.out:
        write_atomically(args.out, text, "--out")
    else:
        print(text, end="")
    return 0
