"""The demo model served through `nim-specdec serve` (launch.server_process), for the bench e2e checks."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Iterator

from nim_specdec.launch.server_process import ServerSpec, running_server
from nim_specdec.tools.ngram.grid import specdec_args
from nim_specdec.tools.ngram.simulator import NgramParams

SERVED_NAME = "tiny"


@contextlib.contextmanager
def demo_server(target: Path, log: Path, ngram: NgramParams | None = None, capture: Path | None = None) -> Iterator[str]:
    """`nim-specdec serve` of the demo target, n-gram on when `ngram` is given, capture on when `capture` is."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("NIM_")}
    env.update(HF_HUB_OFFLINE="1", VLLM_CPU_KVCACHE_SPACE="1", NIM_MODEL_PATH=str(target), NIM_SERVED_MODEL_NAME=SERVED_NAME,
               NIM_CACHE_PATH=str(log.parent / "nim-cache"), NIM_SPECDEC_ENABLE="1" if ngram else "0")
    if ngram:
        env["NIM_SPECDEC_ARGS"] = specdec_args(ngram)
    if capture:
        env.update(NIM_CAPTURE_ENABLE="1", NIM_CAPTURE_ARGS=json.dumps({"path": str(capture)}))
    spec = ServerSpec(env=env, args=("--max-model-len", "512"), ready_timeout_s=600, log_path=log)
    with running_server(spec) as server:
        yield server.url
