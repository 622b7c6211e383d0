"""`plan` and a local-only `serve` import nothing heavy before exec."""

from __future__ import annotations

import json
import os
import subprocess
import sys

HEAVY = [
    "torch",
    "vllm",
    "boto3",
    "botocore",
    "google.cloud",
    "ngcsdk",
    "huggingface_hub",
    "transformers",
    "numpy",
    "scipy",
]

PROBE = """
import json, os, sys
from nim_specdec.launch.resolve import plan_for
plan_for(dict(os.environ), sys.argv[1:])
print(json.dumps(sorted(m for m in sys.modules)))
"""


def test_plan_imports_nothing_heavy(models):
    env = {
        **os.environ,
        "NIM_CACHE_PATH": str(models["cache"]),
        "NIM_MODEL_PATH": str(models["target"]),
        "NIM_DRAFT_MODEL_PATH": str(models["draft"]),
        "NIM_SPECDEC_ENABLE": "1",
    }
    args = ["--speculative-config", '{"method": "eagle3", "model": "eagle3_draft", "num_speculative_tokens": 3}']
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    loaded = set(json.loads(proc.stdout))
    assert [m for m in HEAVY if m in loaded] == []
