"""`nim-specdec serve [VLLM ARGS]`: the container entrypoint.

Validate everything first (milliseconds), then download, then exec the vLLM server (or, with NIM_ENGINE=sglang,
`python -m sglang.launch_server`) so that it becomes this process: no wrapper stays, and SIGTERM from Docker or
Kubernetes reaches the engine.
`prepare` is the same without the hand-off (init containers, multi-node workers).
"""

from __future__ import annotations

import argparse
import logging
import os

from nim_specdec.config.settings import Settings, parse_settings
from nim_specdec.errors import MaterializeError
from nim_specdec.launch.facts import vllm_flavor
from nim_specdec.launch.handoff import exec_plan, hand_off
from nim_specdec.launch.pipeline import prepare
from nim_specdec.launch.stage_inputs import log_format
from nim_specdec.text.logs import setup_logging


def launcher_log(settings: Settings) -> logging.Logger:
    return setup_logging(settings.log_level, settings.jsonl_logging, settings.host.secrets)


def run(args: argparse.Namespace) -> int:
    settings = parse_settings(os.environ)  # the one parse of the environment; each step below is given its part
    # Before any download: nothing could run what it fetched.
    if settings.engine == "sglang":
        from nim_specdec.engines.sglang.installed import installation, serve_python  # noqa: PLC0415 - SGLang's only

        sglang = installation(settings.host.sglang_python)
        serve_python(sglang.python, sglang.version or None)  # exit 2, naming NIM_ENGINE
    elif vllm_flavor() is None:
        raise MaterializeError("vLLM", "is not installed", "pip install 'nim-specdec[gpu]' (or '[cpu]' without a GPU)")
    log = launcher_log(settings)
    plan = prepare(settings, args.vllm_args, log, for_serve=True)
    vouched = settings.locations.cache_path if settings.cache_trust_shared else None
    plan = hand_off(plan, log, log_format(settings), settings.host.cuda_version, vouched)
    exec_plan(plan, settings.environ, log)
    return 0  # not reached: exec replaced this process
