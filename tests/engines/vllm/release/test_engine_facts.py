"""The engine a plan assumes (vLLM release, device), and how the device is read."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from core_fixtures import facts
from nim_specdec.engines.protocol.sections import DevicePlan
from nim_specdec.launch.resolve import plan_for
from nim_specdec.plan.plan_model import plan_json
from nim_specdec.preflight import device

X86 = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9654  96-Core Processor\nflags\t: fpu\n"
ARM = "processor\t: 0\nBogoMIPS\t: 50.00\nCPU part\t: 0xd0c\n\nHardware\t: Neoverse-N1\n"


@pytest.mark.parametrize(
    "text, expected",
    [
        (X86, "AMD EPYC 9654 96-Core Processor"),
        (ARM, "Neoverse-N1"),
        ("", None),
        ("model name\t:\n", None),
    ],
)
def test_cpu_model_from_cpuinfo(text, expected):
    assert device.cpu_model(text) == expected


def test_a_cpu_without_a_model_name_is_named_by_its_architecture():
    found = device.cpu_device("", 4)
    assert found.kind == "cpu" and found.count == 4 and found.name and found.memory_bytes is None


def test_the_plan_records_the_engine_it_assumes(tmp_path):
    gpu = DevicePlan("gpu", "NVIDIA H200", 8, 150_000_000_000, "580.65.06")
    env = {"NIM_CACHE_PATH": str(tmp_path / "cache"), "NIM_MODEL_PATH": "hf://org/target"}
    _, plan = plan_for(env, [], replace(facts(), vllm_version="0.33.0", device=gpu))
    view = plan_json(plan)
    assert view["engine"] == {
        "vllm_version": "0.33.0",
        "vllm_flavor": "vllm",
        "vllm_snapshot": "0.33.0",
        "vllm_known": True,
        "device": {
            "kind": "gpu",
            "name": "NVIDIA H200",
            "count": 8,
            "memory_bytes": 150_000_000_000,
            "driver": "580.65.06",
        },
        "name": "vllm",
        "release": "0.33.0",
    }


def test_read_device_without_a_driver_names_the_cpu(monkeypatch, tmp_path):
    monkeypatch.setattr(device, "NVIDIA_PROC", tmp_path / "no-driver")
    found = device.read_device(None)
    expected = device.cpu_model(Path("/proc/cpuinfo").read_text()) if Path("/proc/cpuinfo").exists() else None
    assert found.kind == "cpu" and found.count == os.cpu_count() and found.driver is None
    if expected:
        assert found.name == expected


@pytest.mark.gpu
def test_read_device_reads_the_gpu_through_nvml():
    if not shutil.which("nvidia-smi"):
        pytest.skip("no GPU is visible")
    found = device.read_device(None)
    smi = subprocess.run(
        ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.splitlines()[0]
    name, driver = (part.strip() for part in smi.split(","))
    assert (found.kind, found.name, found.driver) == ("gpu", name, driver)
    assert found.memory_bytes > 1024**3 and found.count >= 1
