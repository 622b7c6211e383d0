"""`nim-specdec prepare [VLLM ARGS]`: everything `serve` does except starting vLLM.

The target and the draft are downloaded and linked at the workspace paths of the plan, which is
printed as JSON. Init containers and the worker pods of a multi-node deployment run it with the
leader's environment and arguments, so every node holds the same files at the same paths.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from nim_specdec.cli.cmd_serve import launcher_log
from nim_specdec.config.settings import parse_settings
from nim_specdec.launch.pipeline import prepare
from nim_specdec.launch.resolve import public


def run(args: argparse.Namespace) -> int:
    settings = parse_settings(os.environ)
    plan = prepare(settings, args.vllm_args, launcher_log(settings))
    json.dump(public(plan, settings.host.secrets), sys.stdout, indent=2, allow_nan=False)
    sys.stdout.write("\n")
    return 0
