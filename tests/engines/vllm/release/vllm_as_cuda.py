"""vLLM 0.32's CPU build made to decide as on an NVIDIA GPU: its own CUDA platform class in place of the CPU one.

vllm/platforms/cuda.py imports with its compiled kernels module stubbed (the CPU wheel has none; nothing here
calls a kernel) and finds no NVML, so it gives `NonNvmlCudaPlatform`, whose device queries read torch.cuda.
Those queries are answered for one H100 (compute capability 9.0, 80 GiB); everything else is vLLM's CUDA
platform as it is: its `check_and_update_config` (which keeps DBO, the compilation mode and async scheduling,
where the CPU platform's turns them off), `support_static_graph_mode` (CUDA graphs kept), `is_cuda`.
`vllm.config.vllm.HAS_TRITON` is True as on a GPU (the CPU build's Triton has no CPU backend).

The platform object is swapped in every loaded module that holds it, and back after the test, including
modules first imported while it was swapped.
"""

from __future__ import annotations

import sys
import types

H100 = {"capability": (9, 0), "name": "NVIDIA H100 80GB HBM3", "memory": 80 << 30, "devices": 8}


def cuda_platform_class(monkeypatch) -> type:
    monkeypatch.setitem(sys.modules, "vllm._C_stable_libtorch", types.ModuleType("vllm._C_stable_libtorch"))
    import vllm.platforms.cuda as cuda
    from vllm.platforms.interface import DeviceCapability

    class StubbedDeviceCuda(cuda.NonNvmlCudaPlatform):
        @classmethod
        def get_device_capability(cls, device_id: int = 0) -> DeviceCapability:
            return DeviceCapability(*H100["capability"])

        @classmethod
        def get_device_name(cls, device_id: int = 0) -> str:
            return H100["name"]

        @classmethod
        def get_device_total_memory(cls, device_id: int = 0) -> int:
            return H100["memory"]

        @classmethod
        def is_fully_connected(cls, physical_device_ids: list[int]) -> bool:
            return True

        @classmethod
        def device_count(cls) -> int:
            return H100["devices"]

    return StubbedDeviceCuda


def _swap(old, new) -> None:
    """Each vLLM module's own binding, read from its namespace (a lazy module's getattr would import)."""
    for name, module in list(sys.modules.items()):
        if name.startswith("vllm") and getattr(module, "__dict__", {}).get("current_platform") is old:
            setattr(module, "current_platform", new)


def as_cuda(monkeypatch):
    """Install the CUDA platform; returns a function that puts the CPU platform back everywhere."""
    import vllm.config.vllm as vllm_config
    import vllm.platforms as platforms

    cpu = platforms.current_platform
    cuda = cuda_platform_class(monkeypatch)()
    monkeypatch.setattr(vllm_config, "HAS_TRITON", True)
    monkeypatch.setattr(platforms, "_current_platform", cuda)
    _swap(cpu, cuda)
    assert platforms.current_platform.is_cuda() and not platforms.current_platform.is_cpu()

    def restore() -> None:
        _swap(cuda, cpu)
        platforms._current_platform = cpu

    return restore
