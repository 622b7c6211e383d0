"""The vLLM check's states other than pass and refuse: the version in every refusal, vLLM's once-only
lines after the muted check, and "not checked" where vLLM sees no device (not a refusal, exit 0)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import metadata

import pytest

from nim_specdec.engines.vllm.boot.vllm_boot import check_context
from nim_specdec.engines.vllm.check.judge import check_plan
from nim_specdec.errors import ConfigError
from nim_specdec.launch.check_request import check_request
from nim_specdec.launch.facts import vllm_flavor
from nim_specdec.launch.resolve import plan_for

DRAFT_TOO_LONG = {"method": "draft_model", "num_speculative_tokens": 2, "max_model_len": 100000}
NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 1}


def _env(agree_models, tmp_path) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("NIM_")},
        "HF_HUB_OFFLINE": "1",
        "NIM_MODEL_PATH": str(agree_models["target"]),
        "NIM_CACHE_PATH": str(tmp_path / "cache"),
    }


def test_a_refusal_names_the_installed_vllm_version(agree_models, tmp_path):
    env = _env(agree_models, tmp_path)
    spec = {**DRAFT_TOO_LONG, "model": str(agree_models["draft-other"])}
    settings, plan = plan_for(env, ["--speculative-config", json.dumps(spec)])
    version = metadata.version(vllm_flavor())
    request = check_request(plan)
    assert json.loads(check_context(request, "INFO", False))["vllm_version"] == version  # what vllm_boot is given
    with pytest.raises(ConfigError) as caught:
        check_plan(request, settings.host.secrets, {})
    assert f"vLLM {version} refuses this configuration" in caught.value.one_line()


# Runs in its own Python, so that no other test's patch of vLLM's platform or caches decides which once-only
# lines its config raises, and read from what vLLM itself writes (building a config re-applies vLLM's logging
# configuration, which drops any handler a test adds to its loggers). The lines a second build no longer
# prints are vLLM's once-only lines; the first build after the check must print them: the check ran muted
# and must not have used them up.
ONCE_AFTER_CHECK = r"""
import json, sys
from nim_specdec.engines.vllm.check.judge import judge

args = json.loads(sys.argv[1])
assert judge(args).ok
from vllm.engine.arg_utils import AsyncEngineArgs
from vllm.entrypoints.launchers.cli_args import make_arg_parser
from vllm.usage.usage_lib import UsageContext
from vllm.utils.argparse_utils import FlexibleArgumentParser

for mark in ("@@first", "@@second"):
    # What the server does after the check, in the same process: parse and build the engine config.
    print(mark, flush=True)
    parsed = make_arg_parser(FlexibleArgumentParser()).parse_args(args)
    AsyncEngineArgs.from_cli_args(parsed).create_engine_config(UsageContext.OPENAI_API_SERVER)
print("@@end", flush=True)
"""


def _messages(log: str) -> set[str]:
    """vLLM's warning lines, without their process, time and place: `(pid) WARNING date [file:line] text`."""
    return {line.split("] ", 1)[1] for line in log.splitlines() if " WARNING " in line and "] " in line}


def test_once_only_warnings_of_the_check_print_again_in_the_same_process(agree_models, tmp_path):
    args = ["--model", str(agree_models["target"]), "--max-model-len", "384", "--speculative-config", json.dumps(NGRAM)]
    done = subprocess.run(
        [sys.executable, "-u", "-c", ONCE_AFTER_CHECK, json.dumps(args)],
        env={**_env(agree_models, tmp_path), "VLLM_LOGGING_STREAM": "ext://sys.stdout"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and "@@end" in done.stdout, done.stdout[-3000:]
    check, rest = done.stdout.split("@@first", 1)
    first, second = rest.split("@@second", 1)
    once_only = _messages(first) - _messages(second)
    assert once_only, done.stdout[-3000:]  # the check used none of them up: the server's build still prints each
    assert not once_only & _messages(check), check  # and the check itself kept them quiet


# Runs in its own Python: vLLM's platform is replaced by the one a process without any device gets, and
# modules imported meanwhile keep it, so the test process is left alone.
NO_DEVICE = r"""
import json, sys
import vllm.platforms
from vllm.platforms.interface import UnspecifiedPlatform
vllm.platforms.current_platform = UnspecifiedPlatform()
from nim_specdec.engines.vllm.boot.vllm_boot import _check
from nim_specdec.engines.vllm.check.judge import judge
from nim_specdec.engines.vllm.check.request import CheckRequest
from nim_specdec.cli.main import main

target, spec = sys.argv[1], sys.argv[2]
verdict = judge(["--model", target, "--speculative-config", spec])
print(json.dumps({"judge": [verdict.ok, verdict.stage]}), file=sys.stderr)
boot = []
_check(CheckRequest(("vllm", "serve", target, "--speculative-config", spec), vllm_version="x"), [], boot.append)
print(json.dumps({"boot": boot}), file=sys.stderr)
sys.exit(main(["plan", "--check-vllm", "--speculative-config", spec]))
"""


def test_without_a_device_the_plan_says_not_checked_and_exits_0(agree_models, tmp_path):
    env = _env(agree_models, tmp_path)
    spec = json.dumps({**DRAFT_TOO_LONG, "model": str(agree_models["draft-other"])})  # refused where vLLM can judge
    done = subprocess.run(
        [sys.executable, "-c", NO_DEVICE, str(agree_models["target"]), spec],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    check = json.loads(done.stdout)["vllm_check"]
    assert check["status"] == "not checked" and check["ran"] is False, check
    assert "no GPU or other device" in check["skipped"]
    assert "nim-specdec: error" not in done.stderr
    reports = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    # Not a pass either: the verdict says it was not judged (vLLM's parser itself needs a device).
    assert {"judge": [True, "unchecked"]} in reports, done.stderr
    # Where the server starts (vllm_boot) the same state lets vLLM's own start decide.
    (boot,) = [r["boot"] for r in reports if "boot" in r]
    assert len(boot) == 1 and boot[0].startswith("vLLM check: not checked: ") and "start decides" in boot[0]
