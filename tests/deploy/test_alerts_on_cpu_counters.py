"""The vLLM alerts (shipped, and rendered by `nim-specdec alert-rules`) on the real counters of the CPU vLLM
server: the shared ngram run's /v1/metrics scrapes (tests/deploy/cpu_scrapes.py), before and after two batches
of greedy requests, then their growth replayed minute by minute under `promtool test rules`. The acceptance
length tune's interval is set around is the one `nim-specdec report` reads from the same scrapes."""

from __future__ import annotations

import json
import subprocess
import sys
from itertools import cycle, islice
from pathlib import Path

import pytest
import yaml
from cpu_scrapes import Scrapes
from promtool_alerts import alert_rules, run_case
from promtool_case import metric_names, samples

pytestmark = pytest.mark.e2e

SHIPPED = Path(__file__).resolve().parents[2] / "deploy" / "monitoring" / "nim-specdec-alerts.rules.yaml"
MINUTES = 45
BELOW, STOPPED, OFF = "NimSpecDecodeAcceptanceBelowTuned", "NimSpecDecodeDraftsStopped", "NimSpecDecodeConfiguredButOff"
DRAFTS = "vllm:spec_decode_num_drafts_total"


@pytest.fixture(scope="session")
def scrapes(ngram_run) -> Scrapes:
    return ngram_run.probe("monitoring_scrapes")


def replayed(scrapes: Scrapes, names: set[str], frozen: str | None = None, dropped: str = "") -> dict[str, str]:
    """Each series the rules read, one value a minute: the three real scrapes, then the two batches' growth
    again and again. `frozen`: a counter family that stops after the real scrapes; `dropped`: a prefix of
    families the server does not export (vLLM without a speculative config exports no vllm:spec_decode_*)."""
    before, first, second = samples(scrapes.before), samples(scrapes.first), samples(scrapes.second)
    out = {}
    for series, end in sorted(second.items()):
        name = series.split("{", 1)[0]
        if name not in names or (dropped and name.startswith(dropped)):
            continue
        start, middle = before.get(series, 0.0), first.get(series, 0.0)
        steps = [middle - start, end - middle]
        values, value = [start, middle, end], end
        for step in islice(cycle(steps), MINUTES - 3):
            value += 0.0 if name == frozen else step
            values.append(value)
        out[series] = " ".join(repr(v) for v in values)
    return out


def _report_length(scrapes: Scrapes, tmp_path: Path) -> float:
    """`nim-specdec report --since` on the real pair (before, second), as a user would read it."""
    from test_monitoring_rules import _report_since  # noqa: PLC0415 - the loopback server of that test

    report = _report_since(scrapes.before, scrapes.second, tmp_path)
    assert report[scrapes.model]["status"] == "active"
    return report[scrapes.model]["acceptance_length"]


def _rendered(tmp_path: Path, model: str, low: float, high: float) -> Path:
    tune = {
        "decision": {"recommended": "ngram-k3"},
        "expected_acceptance": {
            "recommended": "ngram-k3",
            "by_configuration": [
                {
                    "configuration": "ngram-k3",
                    "method": "ngram",
                    "k": 3,
                    "runs": 6,
                    "acceptance_length_mean": (low + high) / 2,
                    "acceptance_length_interval": [low, high],
                }
            ],
        },
    }
    source, out = tmp_path / "tune.json", tmp_path / f"tuned-{low}.rules.yaml"
    source.write_text(json.dumps(tune))
    done = subprocess.run(
        [sys.executable, "-m", "nim_specdec", "alert-rules", str(source), "--model-name", model]
        + ["--format", "rules", "--min-drafts", "1", "--window", "5m", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return out


def test_every_metric_the_vllm_alerts_read_is_exported(scrapes: Scrapes, tmp_path: Path) -> None:
    exported = {series.split("{", 1)[0] for series in samples(scrapes.before)}
    rendered = _rendered(tmp_path, scrapes.model, 1.0, 2.0)
    vllm_rules = [r for r in alert_rules([SHIPPED, rendered]) if r["labels"]["engine"] == "vllm"]
    used = set().union(*(metric_names(r["expr"]) for r in vllm_rules))
    assert {DRAFTS, "vllm:generation_tokens_total"} <= used
    assert used <= exported, f"not exported by the CPU server: {sorted(used - exported)}"
    # Present before this test's own requests: what the alerts take for "configured" in the engine.
    assert any(series.startswith(DRAFTS + "{") for series in samples(scrapes.before))


def test_alerts_on_the_real_counters(scrapes: Scrapes, tmp_path: Path) -> None:
    length = _report_length(scrapes, tmp_path)
    assert length > 1.0  # the guide's n-gram accepted something on these prompts
    model, instance = scrapes.model, "a:8000"
    above = _rendered(tmp_path, model, length + 1.0, length + 1.5)  # tune measured more than live shows
    around = _rendered(tmp_path, model, length - 0.75, length + 0.75)
    rules = [SHIPPED, above, around]
    names = set().union(*(metric_names(r["expr"]) for r in alert_rules(rules)))
    tuned = {"severity": "warning", "engine": "vllm", "model_name": model, "tuned_configuration": "ngram-k3"}
    shipped = {"severity": "warning", "engine": "vllm", "model_name": model}

    def check(series: dict[str, str], expected: list, only: list[Path]) -> None:
        labelled = {s.replace("{", f'{{instance="{instance}",', 1): v for s, v in series.items()}
        done = run_case(tmp_path, only, labelled, [("40m", name, alerts) for name, alerts in expected])
        assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"

    # Drafting as measured: below the interval above it, not below the one around it; nothing stopped or off.
    drafting = replayed(scrapes, names)
    check(drafting, [(BELOW, [tuned]), (STOPPED, []), (OFF, [])], [above])
    check(drafting, [(BELOW, []), (STOPPED, []), (OFF, [])], [around])
    check(drafting, [(STOPPED, []), (OFF, [])], [SHIPPED])
    # The draft counter frozen while tokens are still generated: drafts stopped, in both files.
    frozen = replayed(scrapes, names, frozen=DRAFTS)
    check(frozen, [(STOPPED, [tuned]), (BELOW, [])], [around])
    check(frozen, [(STOPPED, [shipped])], [SHIPPED])
    # Served without a speculative config (no vllm:spec_decode_* at all): off, and no ratio to fire on.
    off = replayed(scrapes, names, dropped="vllm:spec_decode")
    assert off and not any(s.startswith("vllm:spec_decode") for s in off)
    check(off, [(OFF, [{**tuned, "instance": instance}]), (BELOW, []), (STOPPED, [])], [around])
    # The shipped rule needs the model to have speculated within the day: the real pod before the off one.
    history = {s.replace("{", '{instance="b:8000",', 1): v for s, v in drafting.items() if s.startswith(DRAFTS)}
    history = {s: " ".join(v.split()[:5]) + f" _x{MINUTES - 5}" for s, v in history.items()}
    labelled_off = {s.replace("{", f'{{instance="{instance}",', 1): v for s, v in off.items()}
    done = run_case(
        tmp_path,
        [SHIPPED],
        {**labelled_off, **history},
        [("40m", OFF, [{**shipped, "instance": instance}]), ("40m", STOPPED, [])],
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"


def test_replayed_series_keep_the_real_ratio(scrapes: Scrapes) -> None:
    """The replay repeats the batches' own growth: accepted / drafts over any two minutes is the real one."""
    names = {DRAFTS, "vllm:spec_decode_num_accepted_tokens_total"}
    series = replayed(scrapes, names)
    totals = {n: [0.0] * MINUTES for n in names}
    for key, values in series.items():
        for i, v in enumerate(values.split()):
            totals[key.split("{", 1)[0]][i] += float(v)
    drafts, accepted = totals[DRAFTS], totals["vllm:spec_decode_num_accepted_tokens_total"]
    real = (accepted[2] - accepted[0]) / (drafts[2] - drafts[0])
    assert (accepted[44] - accepted[2]) / (drafts[44] - drafts[2]) == pytest.approx(real)
    assert yaml.safe_dump(series)  # plain strings promtool reads
