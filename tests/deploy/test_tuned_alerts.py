"""`nim-specdec alert-rules`: tune.json's expected acceptance, and the alerts rendered from it under `promtool test
rules` (each alert on series that fire and series that must not), as a plain rules file and as a PrometheusRule."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from promtool_alerts import promtool, run_case

from nim_specdec_lab.stats import t975
from nim_specdec_lab.tune.reporting.expected_acceptance import expected_acceptance

NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 1}
EAGLE = {"method": "eagle3", "model": "eagle3_draft", "num_speculative_tokens": 2}
MODEL = "meta/llama-3.1-8b-instruct"
BELOW, STOPPED, OFF = "NimSpecDecodeAcceptanceBelowTuned", "NimSpecDecodeDraftsStopped", "NimSpecDecodeConfiguredButOff"


def _run(name: str, drafts: float, accepted: float) -> dict:
    return {"configuration": name, "round": 1, "concurrency": 1, "spec": {"drafts": drafts, "accepted": accepted}}


def tune_json(recommended: str = "ngram-k3", ngram_runs=((100, 120), (100, 130), (100, 110), (100, 125))) -> dict:
    """What tune.json holds that the alerts read: the configurations, the runs' counter growth, the decision."""
    return {
        "decision": {"recommended": recommended},
        "configurations": [
            {"name": "off", "speculative_config": None},
            {"name": "ngram-k3", "speculative_config": NGRAM},
            {"name": "eagle3-k2", "speculative_config": EAGLE},
        ],
        "runs": [
            {"configuration": "off", "spec": None},
            *(_run("ngram-k3", d, a) for d, a in ngram_runs),
            _run("eagle3-k2", 50, 40),  # one run only: no interval
            _run("ngram-k3", 0, 0),  # drafted nothing: no acceptance length to count
        ],
    }


def test_expected_acceptance_is_a_prediction_interval_over_the_runs() -> None:
    table = expected_acceptance(tune_json())
    rows = {r["configuration"]: r for r in table["by_configuration"]}
    assert table["recommended"] == "ngram-k3" and set(rows) == {"ngram-k3", "eagle3-k2"}
    lengths = [2.2, 2.3, 2.1, 2.25]
    mean = sum(lengths) / 4
    sd = math.sqrt(sum((x - mean) ** 2 for x in lengths) / 3)
    half = t975(3) * sd * math.sqrt(1 + 1 / 4)
    ngram = rows["ngram-k3"]
    assert (ngram["method"], ngram["k"], ngram["runs"]) == ("ngram", 3, 4)
    assert ngram["acceptance_length_mean"] == pytest.approx(mean, abs=1e-4)
    assert ngram["acceptance_length_interval"] == pytest.approx([mean - half, mean + half], abs=1e-4)
    assert rows["eagle3-k2"]["acceptance_length_interval"] is None and rows["eagle3-k2"]["runs"] == 1


def render(tmp_path: Path, *extra: str, data: dict | None = None) -> subprocess.CompletedProcess:
    source = tmp_path / "tune.json"
    source.write_text(json.dumps(data if data is not None else tune_json()))
    return subprocess.run(
        [sys.executable, "-m", "nim_specdec", "alert-rules", str(source), "--model-name", MODEL, *extra],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def rules(tmp_path: Path) -> Path:
    out = tmp_path / "tuned.rules.yaml"
    done = render(tmp_path, "--format", "rules", "--min-drafts", "100", "--out", str(out))
    assert done.returncode == 0, done.stderr
    return out


def series(name: str, model: str = MODEL, instance: str = "a:8000") -> str:
    return f'vllm:{name}_total{{engine="0",instance="{instance}",model_name="{model}"}}'


def low_bound() -> float:
    return expected_acceptance(tune_json())["by_configuration"][1]["acceptance_length_interval"][0]


# 60 drafts a minute; accepted per minute sets the acceptance length (1 + accepted / drafts).
def accepting(per_minute: int, model: str = MODEL) -> dict[str, str]:
    return {
        series("generation_tokens", model): "0+300x60",
        series("spec_decode_num_drafts", model): "0+60x60",
        series("spec_decode_num_accepted_tokens", model): f"0+{per_minute}x60",
    }


TUNED = {"tuned_configuration": "ngram-k3", "severity": "warning", "engine": "vllm", "model_name": MODEL}
CASES = {
    "acceptance far below": (accepting(30), [(BELOW, [TUNED])]),  # length 1.5
    "acceptance inside the interval": (accepting(75), [(BELOW, [])]),  # length 2.25
    "another model low": (accepting(30, "other"), [(BELOW, []), (OFF, [])]),
    "too few drafts to judge": (
        {
            series("generation_tokens"): "0+300x60",
            series("spec_decode_num_drafts"): "0+5x60",
            series("spec_decode_num_accepted_tokens"): "0+2x60",
        },
        [(BELOW, [])],
    ),
    "drafts stopped": (
        {series("generation_tokens"): "0+300x60", series("spec_decode_num_drafts"): "0+60x10 600x50"},
        [(STOPPED, [TUNED]), (BELOW, [])],
    ),
    "no traffic": (
        {series("generation_tokens"): "9000x60", series("spec_decode_num_drafts"): "600x60"},
        [(STOPPED, [])],
    ),
    "served without speculation": (
        {series("generation_tokens"): "0+300x60"},
        [(OFF, [{**TUNED, "instance": "a:8000"}]), (STOPPED, [])],
    ),
    "speculating": (accepting(75), [(OFF, []), (STOPPED, [])]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_tuned_alerts(name: str, rules: Path, tmp_path: Path) -> None:
    assert 1.5 < low_bound() < 2.25  # the cases' lengths fall on either side of the lower bound
    given, checks = CASES[name]
    done = run_case(tmp_path, [rules], given, [("45m", alert, alerts) for alert, alerts in checks])
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"


def test_prometheus_rule_holds_the_same_group(rules: Path, tmp_path: Path) -> None:
    done = render(tmp_path, "--min-drafts", "100", "--namespace", "serving")
    assert done.returncode == 0, done.stderr
    resource = yaml.safe_load(done.stdout)
    assert (resource["apiVersion"], resource["kind"]) == ("monitoring.coreos.com/v1", "PrometheusRule")
    assert resource["metadata"]["namespace"] == "serving"
    assert resource["metadata"]["name"] == "nim-specdec-tuned-meta-llama-3-1-8b-instruct"
    assert resource["spec"]["groups"] == yaml.safe_load(rules.read_text())["groups"]


@pytest.mark.parametrize(
    "extra, data, names",
    [
        ((), tune_json(recommended="off"), ("TUNE_JSON", "speculation off", "NIM_SPECDEC_ENABLE=0")),
        (("--configuration", "eagle3-k2"), None, ("TUNE_JSON", "1 run", "--rounds 2")),
        (("--configuration", "medusa-k4"), None, ("--configuration", "medusa-k4", "eagle3-k2, ngram-k3")),
        (("--window", "fifteen"), None, ("--window", "fifteen", "15m")),
        (("--namespace", "Not_A_Namespace"), None, ("--namespace", "Not_A_Namespace")),
        ((), {"runs": "junk"}, ("TUNE_JSON", "not a tune.json")),
    ],
)
def test_bad_input_is_one_line_exit_2(tmp_path: Path, extra, data, names) -> None:
    done = render(tmp_path, *extra, data=data)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and all(n in lines[0] for n in names), done.stderr
    assert not done.stdout


def _table(interval, configuration="x", method="ngram", mean=2.0, k=3, runs=4) -> dict:
    row = {
        "configuration": configuration,
        "method": method,
        "k": k,
        "runs": runs,
        "acceptance_length_mean": mean,
        "acceptance_length_interval": interval,
    }
    return {"expected_acceptance": {"recommended": configuration, "by_configuration": [row]}}


@pytest.mark.parametrize(
    "data, fragment",
    [
        # a fifth round's class: tune.json's figures reached the rules unparsed, and each made an alert that
        # can never fire (`< True` is PromQL for a metric named True; a bound below 1 no acceptance crosses)
        (_table([True, 3]), "low is True, not a number"),
        (_table([2.5, 1.5]), "not a mean of at least 1 inside its interval"),
        (_table([1.5, 2.5], mean=0.5), "not a mean of at least 1"),
        (_table([1.5, 2.5], runs=True), "runs is True, not a count"),
        (_table([1.5]), "not [low, high]"),
        (_table([-7, 2]), "lower bound -7.000 is below 1"),
    ],
)
def test_figures_that_make_an_alert_that_never_fires_are_refused(tmp_path: Path, data, fragment) -> None:
    done = render(tmp_path, "--format", "rules", data=data)
    assert done.returncode == 2 and fragment in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not done.stdout


def test_names_with_template_braces_are_printed_never_run(tmp_path: Path) -> None:
    """Labels and annotations are Go templates: a `{{` in a configuration or method name from tune.json made
    Prometheus refuse the whole rule file. They are printed as text now, and promtool accepts the file."""
    out = tmp_path / "rules.yaml"
    data = _table([1.5, 2.5], configuration="x{{ .Labels.foo }", method="ngram}}")
    done = render(tmp_path, "--format", "rules", "--out", str(out), data=data)
    assert done.returncode == 0, done.stderr
    check = subprocess.run([promtool(), "check", "rules", str(out)], capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    rule = yaml.safe_load(out.read_text())["groups"][0]["rules"][0]
    assert rule["labels"]["tuned_configuration"] == 'x{{"{{"}} .Labels.foo }'
    assert 'ngram{{"}}"}}' in rule["annotations"]["description"]
