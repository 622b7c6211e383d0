"""The plan's model runner against vLLM's own `VllmConfig.use_v2_model_runner`, on a generated corpus.

Each case's vLLM serve arguments go through vLLM's parser and `create_engine_config` in this process (vLLM
0.32, the CPU build, on the demo model), with VLLM_USE_V2_MODEL_RUNNER set as the case says, and through
`resolve` with the platform the plan is told. For "cuda", two narrow patches make the CPU build decide as a
CUDA build does:
- `vllm.config.vllm.HAS_TRITON` is True (vllm/triton_utils/importing.py finds an active Triton driver on a
  GPU; the CPU build's Triton has no CPU backend). The property reads nothing else of the platform in 0.32.
- the CPU platform's `check_and_update_config` keeps `enable_dbo` (it switches DBO off on CPU; the CUDA
  platform does not), so DBO reaches vLLM's runner checks as on a GPU.
HiSparse is refused by the CPU platform itself ("requires NVIDIA CUDA") before the runner matters, so for
those cases the real config is built without it, then `hisparse_config` is set on it and the property and
`_validate_v2_model_runner` are called: the part of VllmConfig they read, not a whole HiSparse start.
vLLM's CUDA graph downgrade for a schedule is read from its own `_maybe_override_dynamic_sd_cudagraph_mode`,
called by __post_init__ as usual and observed (mode before and after), not re-implemented.
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

from nim_specdec.config.model_runner import ENV  # noqa: E402
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
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    target = str(models["target"])
    mismatches, kinds = [], Counter()
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
        if ours != theirs:
            mismatches.append((case.id, ours, theirs))
    assert not mismatches, f"{len(mismatches)} of {len(cases)} cases differ: {mismatches}"
    return kinds


def test_plan_runner_equals_vllm_on_cuda(models, tmp_path, monkeypatch, vllm_as_cuda):
    cases = all_cases(models)
    kinds = _compare(cases, models, tmp_path, monkeypatch, "cuda", vllm_as_cuda)
    assert len(cases) >= 300
    # Every kind of outcome is in the corpus, so each path of the choice ran.
    for kind in (("ok", "v1"), ("ok", "v2"), ("refused",), ("dropped",), "downgrade"):
        assert kinds[kind] >= 5, (kind, kinds)


def test_plan_runner_equals_vllm_on_cpu(models, tmp_path, monkeypatch):
    """The CPU build as it is: no Triton, so V1 unless the variable forces V2, which vLLM then refuses."""
    graph_changes = _observe_graphs(monkeypatch, __import__("vllm.config.vllm", fromlist=["VllmConfig"]).VllmConfig)
    cases = [case for case in all_cases(models, sampled=0) if not case.hisparse]
    kinds = _compare(cases, models, tmp_path, monkeypatch, "cpu", graph_changes)
    assert kinds[("ok", "v1")] >= 20 and kinds[("refused",)] >= 10 and kinds[("ok", "v2")] == 0, kinds
