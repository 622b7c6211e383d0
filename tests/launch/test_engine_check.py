"""The shell with NIM_ENGINE=sglang, through the real entry points: `plan` runs SGLang's own resolution where SGLang
is installed and lists what it would change, or stops in one line where SGLang refuses the command; `serve` refuses
in one line where SGLANG_PYTHON has no SGLang, before anything is fetched, and otherwise execs
`python -m sglang.launch_server` with the plan's argv, nothing of vLLM's around it. SGLang cannot serve on this
machine: the exec is taken by an interpreter that records its arguments, in an environment that holds SGLang
0.5.23's package metadata (what engines/sglang/installed.py reads)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

EAGLE3 = '{"method": "eagle3", "model": "eagle3_draft", "num_speculative_tokens": 3}'
DATA = Path(__file__).resolve().parents[1] / "data" / "model_configs"  # real config.json, which SGLang reads
LLAMA = DATA / "meta-llama--Llama-3.1-8B-Instruct"
EAGLE3_DRAFT = DATA / "yuhuili--EAGLE3-LLaMA3.1-Instruct-8B"


def _env(models, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NIM_") and k != "SGLANG_PYTHON"}
    env.update(
        NIM_ENGINE="sglang",
        NIM_MODEL_PATH=str(LLAMA),
        NIM_DRAFT_MODEL_PATH=str(EAGLE3_DRAFT),
        NIM_CACHE_PATH=str(models["cache"]),
        **extra,
    )
    return env


def _run(command: str, args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "nim_specdec", command, *args], env=env, capture_output=True, text=True, timeout=300
    )


def test_plan_lists_what_sglang_would_change(models, sglang_python):
    args = ["--speculative-config", EAGLE3, "--speculative-num-draft-tokens", "9"]
    done = _run("plan", args, _env(models, SGLANG_PYTHON=sglang_python))
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert plan["engine"]["name"] == "sglang"
    assert "--speculative-num-draft-tokens: asked 9, SGLang 0.5 serves 4 (its _handle_eagle_family)" in plan["warnings"]
    assert plan["vllm_check"]["skipped"].startswith("not used by SGLang")


def test_plan_stops_in_one_line_where_sglang_refuses_the_command(models, sglang_python):
    args = ["--speculative-config", EAGLE3, "--speculative-num-steps", "x"]
    done = _run("plan", args, _env(models, SGLANG_PYTHON=sglang_python))
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "SGLang's resolver: refuses the command:" in lines[0], done.stderr
    assert "speculative_num_steps" in lines[0] or "'x'" in lines[0]
    assert done.stdout == ""


def test_serve_refuses_where_sglang_is_not_installed(models):
    done = _run("serve", [], _env(models, SGLANG_PYTHON=sys.executable))  # the launcher's own: no SGLang
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"nim-specdec: error: NIM_ENGINE: sglang is selected but SGLang is not installed beside {sys.executable}; "
        "use an image with SGLang 0.5 installed, or set NIM_ENGINE=vllm"
    ]
    assert not (models["cache"] / "workspace").exists()  # refused before anything was linked or fetched


def _recording_sglang(root: Path, record: Path) -> Path:
    """An interpreter in an environment holding SGLang 0.5.23's metadata, which records the arguments it is given."""
    (root / "lib" / "python3.12" / "site-packages" / "sglang-0.5.23.dist-info").mkdir(parents=True)
    python = root / "bin" / "python"
    python.parent.mkdir()
    python.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {record}\n')
    python.chmod(0o755)
    return python


def test_serve_execs_sglangs_server_with_the_plans_argv(models, tmp_path):
    record = tmp_path / "argv.txt"
    python = _recording_sglang(tmp_path / "sglang-env", record)
    env = _env(models, SGLANG_PYTHON=str(python))
    done = _run("serve", ["--speculative-config", EAGLE3], env)
    assert done.returncode == 0, done.stderr
    served = record.read_text().splitlines()
    draft = f"{models['cache']}/workspace/eagle3_draft"
    assert served == [
        "-m", "sglang.launch_server", "--model-path", str(LLAMA), "--host", "0.0.0.0", "--port", "8000",
        "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", draft, "--speculative-num-steps", "3",
        "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4",
    ]  # fmt: skip
    assert Path(draft, "config.json").is_file()  # materialized before the exec, as for vLLM
    assert "vllm_boot" not in " ".join(served) and "--middleware" not in served
    assert f"exec: {python} -m sglang.launch_server" in done.stderr
