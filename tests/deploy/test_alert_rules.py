"""The shipped alerts (deploy/monitoring/nim-specdec-alerts.rules.yaml) under `promtool test rules`: for each
alert and each engine, series on which it fires and series on which it must not (no traffic, drafting,
speculation never configured, too short a stop). Series one minute apart; labels as the engines export them."""

from __future__ import annotations

from pathlib import Path

import pytest
from promtool_alerts import run_case

RULES = Path(__file__).resolve().parents[2] / "deploy" / "monitoring" / "nim-specdec-alerts.rules.yaml"
STOPPED, OFF = "NimSpecDecodeDraftsStopped", "NimSpecDecodeConfiguredButOff"
SERVING = "0+100x60"  # generation tokens: 100 a minute for an hour
IDLE = "5000x60"
DRAFTS_THEN_STOP = "0+30x15 450x45"  # 30 drafts a minute, none after minute 15


def vllm(name: str, instance: str = "a:8000") -> str:
    return f'vllm:{name}_total{{engine="0",instance="{instance}",job="nim-specdec",model_name="m"}}'


def sglang(name: str, instance: str = "a:30000", counter: bool = True) -> str:
    suffix = "_total" if counter else ""
    return f'sglang:{name}{suffix}{{instance="{instance}",job="nim-specdec",model_name="m"}}'


VLLM_STOPPED = {"model_name": "m", "severity": "warning", "engine": "vllm"}
SGLANG_STOPPED = {"model_name": "m", "severity": "warning", "engine": "sglang"}

STOPPED_CASES = {
    "vllm drafts flat while serving": (
        {vllm("generation_tokens"): SERVING, vllm("spec_decode_num_drafts"): DRAFTS_THEN_STOP},
        [VLLM_STOPPED],
    ),
    "vllm drafting": ({vllm("generation_tokens"): SERVING, vllm("spec_decode_num_drafts"): "0+30x60"}, []),
    "vllm no traffic": ({vllm("generation_tokens"): IDLE, vllm("spec_decode_num_drafts"): "450x60"}, []),
    "vllm stopped 5 minutes ago": (
        {vllm("generation_tokens"): SERVING, vllm("spec_decode_num_drafts"): "0+30x34 1020x26"},
        [],
    ),
    "vllm never configured": ({vllm("generation_tokens"): SERVING}, []),
    "sglang verify calls flat while serving": (
        {
            sglang("generation_tokens"): SERVING,
            sglang("spec_num_draft_tokens", counter=False): "4x60",
            sglang("spec_verify_calls"): DRAFTS_THEN_STOP,
        },
        [SGLANG_STOPPED],
    ),
    "sglang verify counter absent": (
        {sglang("generation_tokens"): SERVING, sglang("spec_num_draft_tokens", counter=False): "4x60"},
        [SGLANG_STOPPED],
    ),
    "sglang speculation off": (
        {sglang("generation_tokens"): SERVING, sglang("spec_num_draft_tokens", counter=False): "0x60"},
        [],
    ),
    "sglang verifying": (
        {
            sglang("generation_tokens"): SERVING,
            sglang("spec_num_draft_tokens", counter=False): "4x60",
            sglang("spec_verify_calls"): "0+30x60",
        },
        [],
    ),
}


@pytest.mark.parametrize("name", sorted(STOPPED_CASES))
def test_drafts_stopped(name: str, tmp_path: Path) -> None:
    series, alerts = STOPPED_CASES[name]
    done = run_case(tmp_path, [RULES], series, [("40m", STOPPED, alerts), ("40m", OFF, [])])
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"


def off_labels(instance: str, engine: str) -> dict[str, str]:
    return {"model_name": "m", "instance": instance, "severity": "warning", "engine": engine}


GONE = "0+30x20 _x40"  # pod a drafted for 20 minutes, then it was replaced
LATE_SERVING = "_x20 0+100x40"  # pod b from minute 20 on
OFF_CASES = {
    "vllm rollout dropped speculation": (
        {vllm("spec_decode_num_drafts", "a:8000"): GONE, vllm("generation_tokens", "b:8000"): LATE_SERVING},
        [off_labels("b:8000", "vllm")],
    ),
    "vllm one pod of two without": (
        {
            vllm("spec_decode_num_drafts", "a:8000"): "0+30x60",
            vllm("generation_tokens", "a:8000"): SERVING,
            vllm("generation_tokens", "b:8000"): LATE_SERVING,
        },
        [off_labels("b:8000", "vllm")],
    ),
    "vllm new pod configured": (
        {
            vllm("spec_decode_num_drafts", "a:8000"): GONE,
            vllm("generation_tokens", "b:8000"): LATE_SERVING,
            vllm("spec_decode_num_drafts", "b:8000"): "_x20 0+30x40",
        },
        [],
    ),
    "vllm never speculated": ({vllm("generation_tokens", "b:8000"): SERVING}, []),
    "vllm off pod idle": (
        {vllm("spec_decode_num_drafts", "a:8000"): GONE, vllm("generation_tokens", "b:8000"): "_x20 7x40"},
        [],
    ),
    "sglang rollout dropped speculation": (
        {
            sglang("spec_num_draft_tokens", "a:30000", counter=False): "4x20 _x40",
            sglang("spec_num_draft_tokens", "b:30000", counter=False): "_x20 0x40",
            sglang("generation_tokens", "b:30000"): LATE_SERVING,
        },
        [off_labels("b:30000", "sglang")],
    ),
    "sglang new pod configured": (
        {
            sglang("spec_num_draft_tokens", "a:30000", counter=False): "4x20 _x40",
            sglang("spec_num_draft_tokens", "b:30000", counter=False): "_x20 4x40",
            sglang("generation_tokens", "b:30000"): LATE_SERVING,
            sglang("spec_verify_calls", "b:30000"): "_x20 0+30x40",
        },
        [],
    ),
    "sglang never speculated": (
        {
            sglang("spec_num_draft_tokens", "b:30000", counter=False): "0x60",
            sglang("generation_tokens", "b:30000"): SERVING,
        },
        [],
    ),
}


@pytest.mark.parametrize("name", sorted(OFF_CASES))
def test_configured_but_off(name: str, tmp_path: Path) -> None:
    series, alerts = OFF_CASES[name]
    done = run_case(tmp_path, [RULES], series, [("45m", OFF, alerts)])
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"


def test_a_wrong_expectation_fails(tmp_path: Path) -> None:
    """The harness can fail: the firing case's alert expected absent is reported by promtool."""
    series, _ = STOPPED_CASES["vllm drafts flat while serving"]
    done = run_case(tmp_path, [RULES], series, [("40m", STOPPED, [])])
    assert done.returncode != 0 and STOPPED in done.stdout + done.stderr
