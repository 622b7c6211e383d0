"""`nim-specdec tune` on bad input: one line naming the option, the documented exit code, no server left."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

GOOD_LINE = json.dumps(
    {"timestamp": 0, "payload": {"model": "m", "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]}}
)


def _tune(
    tmp_path: Path, *args: str, trace: str | None = GOOD_LINE + "\n", timeout: float = 120, **env: str
) -> subprocess.CompletedProcess:
    model = tmp_path / "model"
    model.mkdir(exist_ok=True)
    (model / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "hidden_size": 64}))
    if trace is not None:
        (tmp_path / "trace.jsonl").write_text(trace)
    full_env = {
        **os.environ,
        "NIM_MODEL_PATH": str(model),
        "NIM_CACHE_PATH": str(tmp_path / "cache"),
        "AIPERF_BIN": os.environ.get("AIPERF_BIN", sys.executable),
        **env,
    }
    command = [
        sys.executable,
        "-m",
        "nim_specdec",
        "tune",
        "--trace",
        str(tmp_path / "trace.jsonl"),
        "--out",
        str(tmp_path / "out"),
        *args,
    ]
    return subprocess.run(command, env=full_env, capture_output=True, text=True, timeout=timeout)


def _one_error(proc: subprocess.CompletedProcess) -> str:
    errors = [line for line in proc.stderr.splitlines() if line.startswith("nim-specdec: error:")]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return errors[0]


CASES = [
    ("concurrency-word", ["--concurrency", "1,two"], GOOD_LINE + "\n", {}, "--concurrency: 'two'"),
    ("concurrency-zero", ["--concurrency", "0,4"], GOOD_LINE + "\n", {}, "--concurrency: '0'"),
    ("concurrency-empty", ["--concurrency", ","], GOOD_LINE + "\n", {}, "--concurrency: ',' names no concurrency"),
    ("max-k-zero", ["--max-k", "0"], GOOD_LINE + "\n", {}, "--max-k: 0 is below 1"),
    ("repeat-zero", ["--repeat", "0"], GOOD_LINE + "\n", {}, "--repeat: 0 is below 1"),
    ("rounds-zero", ["--rounds", "0"], GOOD_LINE + "\n", {}, "--rounds: 0 is below 1"),
    ("max-servers-one", ["--max-servers", "1"], GOOD_LINE + "\n", {}, "--max-servers: 1 is below 2"),
    (
        "unknown-method",
        ["--methods", "ngram,eagle3"],
        GOOD_LINE + "\n",
        {},
        "--methods: 'eagle3' is not a model-free method",
    ),
    ("no-trace-file", [], None, {}, "--trace: cannot read"),
    ("empty-trace", [], "\n\n", {}, "--trace: the capture holds no requests"),
    ("not-json", [], "{nope\n", {}, "--trace: line 1 is not JSON"),
    ("no-payload", [], '{"timestamp": 1}\n', {}, '--trace: line 1 has no "payload" object'),
    (
        "bad-schedule",
        [],
        GOOD_LINE + "\n",
        {
            "NIM_SPECDEC_ENABLE": "1",
            "NIM_SPECDEC_ARGS": json.dumps(
                {
                    "speculative_config": {
                        "method": "ngram",
                        "num_speculative_tokens": 2,
                        "num_speculative_tokens_per_batch_size": [[2, 8, 2]],
                    }
                }
            ),
        },
        "starts at batch size 2, not 1",
    ),
    (
        "serving-version-word",
        ["--serving-vllm-version", "latest"],
        GOOD_LINE + "\n",
        {},
        "--serving-vllm-version: 'latest' is not a vLLM version",
    ),
    (
        "serving-platform-unknown",
        ["--serving-platform", "tpu"],
        GOOD_LINE + "\n",
        {},
        "--serving-platform: 'tpu' is not a serving platform",
    ),
    ("tuned-for-malformed", [], GOOD_LINE + "\n", {"NIM_TUNED_FOR": "v1"}, "NIM_TUNED_FOR: invalid value 'v1'"),
    ("port-argument", ["--", "--port", "9"], GOOD_LINE + "\n", {}, "tune: --port is chosen by tune"),
    ("missing-aiperf", [], GOOD_LINE + "\n", {"AIPERF_BIN": "/nonexistent/aiperf"}, "AIPERF_BIN: no AIPerf executable"),
]


@pytest.mark.parametrize("case_id,args,trace,env,message", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_refused_before_any_server_starts(tmp_path, case_id, args, trace, env, message):
    proc = _tune(tmp_path, *args, trace=trace, **env)
    assert proc.returncode == 2, proc.stderr
    assert message in _one_error(proc)
    assert not (tmp_path / "out" / "logs").exists()  # no server was started


def test_help_names_the_rounds_and_their_default():
    from nim_specdec_lab.cli.cmd_tune import DEFAULT_ROUNDS  # noqa: PLC0415

    shown = subprocess.run(
        [sys.executable, "-m", "nim_specdec", "tune", "--help"], capture_output=True, text=True, timeout=60
    )
    assert shown.returncode == 0 and DEFAULT_ROUNDS == 3
    text = " ".join(shown.stdout.split())
    assert "--rounds ROUNDS" in text and "(default 3;" in text and "--servers" not in text
    assert "--max-servers MAX_SERVERS" in text and "(default: one sweep plus one" in text


def test_decide_imports_only_what_a_decision_needs(tmp_path):
    # The modules `tune --decide` loads, from the interpreter's own import log: the decision and its
    # statistics, never the simulators, the server key's launcher settings, the cost model or the session
    # (other subcommands' modules are named to the parser, not imported).
    runs = tmp_path / "runs.jsonl"
    runs.write_text(
        "".join(
            json.dumps({"config": name, "round": r, "concurrency": 1, "output_tokens_per_s": v * r}) + "\n"
            for r in (1, 2, 3)
            for name, v in (("off", 100.0), ("ngram-k4", 130.0))
        )
    )
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "nim_specdec", "tune", "--decide", str(runs), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "nim_specdec_lab.tune.deciding.decide" in loaded and "nim_specdec_lab.stats" in loaded
    unwanted = ("nim_specdec_lab.ngram", "nim_specdec_lab.suffix", "nim_specdec_lab.server_key")
    unwanted += ("nim_specdec_lab.tune.session", "nim_specdec_lab.tune.model.cost_model", "nim_specdec_lab.bench")
    assert not sorted(m for m in loaded if m.startswith(unwanted))
