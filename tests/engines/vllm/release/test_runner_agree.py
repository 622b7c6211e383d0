"""The plan's model runner against vLLM's own `VllmConfig`, on a generated corpus.

Each case's vLLM serve arguments go through vLLM's parser and `create_engine_config` in this process (vLLM
0.32, the CPU build, on the demo model), with VLLM_USE_V2_MODEL_RUNNER set as the case says, and through
`resolve` with the platform the plan is told. Compared: the runner vLLM keeps (`use_v2_model_runner`) or its
refusal to start (V2's and V1's runner checks, async scheduling asked on where it refuses it), a schedule it
drops, the CUDA graph downgrade a schedule costs, and async scheduling as vLLM settles it.

For "cuda", vLLM's own CUDA platform class replaces the CPU one (vllm_as_cuda.py: only its device queries
answered, for one H100), with HAS_TRITON True as on a GPU. So VllmConfig follows the GPU path: CUDA graphs
kept (`support_static_graph_mode`), compilation mode as given (the CPU platform switches VLLM_COMPILE to
DYNAMO_TRACE_ONCE, which then drops PIECEWISE graphs to NONE before the runner check), DBO kept, async
scheduling left as vLLM decides it (the CPU platform forces it off). That is where DBO meets PIECEWISE graphs,
and piecewise graphs without piecewise compilation (-O0, another -cc.mode), which vLLM drops first.
HiSparse is refused by the CPU build's own checks before the runner matters, so for those cases the real
config is built without it, then `hisparse_config` is set on it and the property and
`_validate_v2_model_runner` are called. vLLM's CUDA graph downgrade for a schedule is read from its own
`_maybe_override_dynamic_sd_cudagraph_mode`, observed (mode before and after), not re-implemented.

What it still cannot see:
- vLLM 0.33: only the installed 0.32 is built. 0.33's async refusals are checked against its own statements
  (test_graph_async_rules.py, from the 0.33 wheel); its DBO limits and piecewise normalisation read the same
  as 0.32's, but no 0.33 VllmConfig decides a case here.
- the plan reads `-O0` or `-cc.KEY` right after a flag without a value (`--async-scheduling -O0`) as that
  flag's value and refuses the command line, so the corpus puts graph settings first.
- anything a real GPU decides after the config: attention backends and their CUDA graph support, kernel
  availability, DeepEP kernels for DBO, memory, the worker's own checks at model load.
- model-dependent limits: multimodal, encoder-decoder, hybrid and encoder-only models for DBO (the corpus has
  one Llama), architectures that opt into breakable CUDA graphs.
- ROCm and XPU (their platform classes are not loaded), ROCm's DeepEP high-throughput DBO rule, the Ray
  executors, and the environment variables TORCH_COMPILE_DISABLE and VLLM_USE_BREAKABLE_CUDAGRAPH, which
  change the compilation mode outside the engine arguments.
- the final CUDA graph mode a GPU runs with (only the schedule's downgrade is compared).
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from runner_corpus import all_cases  # noqa: E402
from runner_harness import launcher_outcome, vllm_outcome  # noqa: E402
from vllm_as_cuda import as_cuda  # noqa: E402

from nim_specdec.engines.vllm.release.runner_choice import ENV  # noqa: E402
from nim_specdec_lab.demo_model import PARTS, make_demo_model  # noqa: E402


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("runner-demo")
    make_demo_model(root)
    return {part: root / part for part in PARTS}


@pytest.fixture
def vllm_as_cuda(monkeypatch):
    """vLLM's own CUDA platform in place of the CPU one (vllm_as_cuda.py); yields the CUDA graph changes seen."""
    import logging

    import vllm.config.vllm as vllm_config

    restore = as_cuda(monkeypatch)
    yield _observe_graphs(monkeypatch, vllm_config.VllmConfig)
    restore()
    logging.disable(logging.NOTSET)


def _observe_graphs(monkeypatch, cls) -> list:
    import logging

    logging.disable(logging.WARNING)  # vLLM logs its config for every case
    seen: list = []
    original = cls._maybe_override_dynamic_sd_cudagraph_mode

    def observed(self):
        before = self.compilation_config.cudagraph_mode.name
        original(self)
        seen.append((before, self.compilation_config.cudagraph_mode.name))

    monkeypatch.setattr(cls, "_maybe_override_dynamic_sd_cudagraph_mode", observed)
    return seen


def _compare(cases, models, tmp_path, monkeypatch, platform, graph_changes) -> Counter:
    # The Hub's library reads HF_HUB_OFFLINE once, at import: imported before the switch and switched for this test
    # alone, or a later test in this process (an hf:// download) would find the library offline for good.
    import transformers  # noqa: F401
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    target = str(models["target"])
    mismatches, kinds, outcomes = [], Counter(), {}
    for case in cases:
        if case.env is None:
            monkeypatch.delenv(ENV, raising=False)
        else:
            monkeypatch.setenv(ENV, case.env)
        ours = launcher_outcome(case, target, platform, str(tmp_path / "cache"))
        theirs = vllm_outcome(case, target, graph_changes)
        if platform == "cpu" and theirs[0] == "ok":
            theirs = (*theirs[:2], None, theirs[3])  # the CPU build runs without CUDA graphs whatever its config says
        kinds[ours[:2] if ours[0] == "ok" else ours] += 1
        kinds["downgrade"] += ours[0] == "ok" and ours[2] is not None
        outcomes[case.id] = theirs
        if ours != theirs:
            mismatches.append((case.id, ours, theirs))
    assert not mismatches, f"{len(mismatches)} of {len(cases)} cases differ, first ones: {mismatches[:8]}"
    return kinds, outcomes


def test_plan_runner_equals_vllm_on_cuda(models, tmp_path, monkeypatch, vllm_as_cuda):
    cases = all_cases(models)
    kinds, outcomes = _compare(cases, models, tmp_path, monkeypatch, "cuda", vllm_as_cuda)
    assert len(cases) >= 500
    # Every kind of outcome is in the corpus, so each path of the choice ran.
    for kind in (("ok", "v1"), ("ok", "v2"), ("refused",), ("dropped",), "downgrade"):
        assert kinds[kind] >= 5, (kind, kinds)
    # Both sides of the GPU-only rules were reached in vLLM itself: DBO refused with compiled PIECEWISE graphs
    # and run on V2 where they are not compiled; async scheduling on, off, and refused.
    assert outcomes["off/dbo/piecewise/env=1"] == ("refused",)
    assert outcomes["off/dbo/O0-piecewise/env=1"][:2] == ("ok", "v2")
    assert outcomes["off/async/default/env=None"][3] is True
    assert outcomes["off/no-async/default/env=None"][3] is False
    assert outcomes["off/pp2-async/default/env=0"] == ("refused",)
    assert outcomes["ngram/async/default/env=None"] == ("refused",)


def test_plan_runner_equals_vllm_on_cpu(models, tmp_path, monkeypatch):
    """The CPU build as it is: no Triton, so V1 unless the variable forces V2, which vLLM then refuses."""
    graph_changes = _observe_graphs(monkeypatch, __import__("vllm.config.vllm", fromlist=["VllmConfig"]).VllmConfig)
    cases = [case for case in all_cases(models, sampled=0) if not case.hisparse]
    kinds, _ = _compare(cases, models, tmp_path, monkeypatch, "cpu", graph_changes)
    assert kinds[("ok", "v1")] >= 20 and kinds[("refused",)] >= 10 and kinds[("ok", "v2")] == 0, kinds
