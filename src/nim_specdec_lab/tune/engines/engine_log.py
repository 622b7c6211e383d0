"""What a vLLM server says about its engine in its log: version, platform, CUDA graph mode, model runner and
async scheduling, where it says it. Pure over the log's text; a value the log does not state is None.

The lines read (vLLM 0.32):
- `Initializing a V1 LLM engine (v0.32.0) with config: ... device_config=cpu, ... 'cudagraph_mode':
  <CUDAGraphMode.NONE: 0>, ...` (vllm/v1/engine/core.py, the configuration after VllmConfig.__post_init__);
- `Using V2 Model Runner` (the workers), or `Model Runner V2 requires Triton; using the V1 model runner
  instead.` / `Model Runner V2 does not yet support ...; using the V1 model runner instead.` (vllm/config/vllm.py);
- `Async scheduling ... disabled` (vllm/config/vllm.py, when it turns async scheduling off by itself).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ENGINE = re.compile(r"Initializing a V1 LLM engine \(v([^)\s]+)\) with config: (.*)")
_DEVICE = re.compile(r"\bdevice_config=([A-Za-z]+)")
_CUDAGRAPH = re.compile(r"'cudagraph_mode': <CUDAGraphMode\.([A-Z_]+)")
_V2 = "Using V2 Model Runner"
_V1 = "using the V1 model runner instead"
_ASYNC_OFF = re.compile(
    r"Async scheduling (?:not supported|will be disabled|is disabled|is not compatible.*will be "
    r"disabled)"
)


@dataclass(frozen=True)
class LoggedEngine:
    vllm_version: str | None = None
    platform: str | None = None
    cudagraph_mode: str | None = None
    runner: str | None = None
    async_scheduling: bool | None = None  # False where vLLM said it turned it off; it never says "on"


def read_engine_log(text: str) -> LoggedEngine:
    version = platform = cudagraph = runner = None
    async_off = False
    for line in text.splitlines():
        engine = _ENGINE.search(line)
        if engine and version is None:
            version = engine.group(1)
            device = _DEVICE.search(engine.group(2))
            platform = device.group(1).lower() if device else None
            graphs = _CUDAGRAPH.search(engine.group(2))
            cudagraph = graphs.group(1) if graphs else None
        if runner is None and _V2 in line:
            runner = "v2"
        elif runner is None and _V1 in line:
            runner = "v1"
        if _ASYNC_OFF.search(line):
            async_off = True
    return LoggedEngine(version, platform, cudagraph, runner, False if async_off else None)
