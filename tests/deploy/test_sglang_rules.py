"""deploy/monitoring/nim-specdec-sglang.rules.yaml on SGLang's counters: two scrapes of the recorded SGLang page
(tests/engines/sglang/data/sglang_metrics.txt) 5 minutes apart give, under `promtool test rules`, what `nim-specdec
report --since` gives for the same pair, in the same units."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml
from promtool_alerts import promtool
from promtool_case import input_series, metric_names

from nim_specdec.engines.sglang import counters as sg

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "monitoring" / "nim-specdec-sglang.rules.yaml"
FIRST = (ROOT / "tests" / "engines" / "sglang" / "data" / "sglang_metrics.txt").read_text()
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
SERIES = f'is_streaming="false",model_name="{MODEL}"}}'
# Five minutes later: 90 more verify steps gave 271 tokens to 1 more finished request.
SECOND = (
    FIRST.replace("} 199.0", "} 289.0")
    .replace(f"{SERIES} 400.0", f"{SERIES} 671.0")
    .replace(f"{SERIES} 2.0", f"{SERIES} 3.0")
    .replace("} 0.6333", "} 0.6")
)


def _close(expr: str, value: float) -> dict:
    return {
        "expr": f"abs({expr} - {value!r}) < bool 1e-9",
        "eval_time": "5m",
        "exp_samples": [{"labels": f'{{engine="sglang",model_name="{MODEL}"}}', "value": 1}],
    }


def test_sglang_recording_rules_match_report(tmp_path: Path) -> None:
    grown = sg.report(sg.difference(sg.parse_sglang(SECOND), sg.parse_sglang(FIRST)))[MODEL]
    assert grown["acceptance_length"] == (271 - 1) / 90
    names = set().union(
        *(metric_names(r["expr"]) for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"])
    )
    case = {
        "rule_files": [str(RULES)],
        "evaluation_interval": "30s",
        "tests": [
            {
                "interval": "5m",
                "input_series": input_series(FIRST, SECOND, names),
                "promql_expr_test": [
                    _close("nim:spec_decode_acceptance_length:rate5m", grown["acceptance_length"]),
                    _close("nim:spec_decode_drafts:rate5m", 90 / 300),
                    # SGLang's gauge averaged over the window, which holds both samples
                    _close("nim:spec_decode_acceptance_rate:ratio_rate5m", (0.6333 + 0.6) / 2),
                    _close("nim:spec_decode_draft_tokens_per_verify", 4.0),
                ],
            }
        ],
    }
    path = tmp_path / "case.yaml"
    path.write_text(yaml.safe_dump(case, sort_keys=False))
    done = subprocess.run([promtool(), "test", "rules", str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
