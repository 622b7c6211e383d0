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
from nim_specdec.config.plan_model import plan_json


def run(args: argparse.Namespace) -> int:
    plan, _ = prepare(args.vllm_args, dict(os.environ))
    json.dump(plan_json(plan), sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0
