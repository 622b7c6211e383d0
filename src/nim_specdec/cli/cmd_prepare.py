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

from nim_specdec.cli.cmd_serve import prepare
from nim_specdec.launch.resolve import public


def add_arguments(parser: argparse.ArgumentParser) -> None:  # arguments all belong to vLLM
    return None


def run(args: argparse.Namespace) -> int:
    env = dict(os.environ)
    plan, _ = prepare(args.vllm_args, env)
    json.dump(public(plan, env), sys.stdout, indent=2, allow_nan=False)
    sys.stdout.write("\n")
    return 0
