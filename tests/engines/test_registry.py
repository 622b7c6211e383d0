"""The shell finds what it reads of a serving engine through the registry: by name, or by the counters a scrape
holds (SGLang's where it holds them, else vLLM's, whose reader then says what is missing)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nim_specdec.engines.registry import SERVING, counters_in, serving_for
from nim_specdec.engines.sglang import counters as sglang
from nim_specdec.engines.vllm.observe import spec_counters as vllm

SGLANG_PAGE = (Path(__file__).parent / "sglang" / "data" / "sglang_metrics.txt").read_text()
VLLM_PAGE = 'vllm:spec_decode_num_drafts_total{model_name="m"} 4.0\n'


@pytest.mark.parametrize(
    "text, reader", [(SGLANG_PAGE, sglang.COUNTERS), (VLLM_PAGE, vllm.COUNTERS), ("", vllm.COUNTERS)]
)
def test_the_counters_a_scrape_holds_pick_the_reader(text, reader):
    assert counters_in(text) is reader


def test_each_engine_says_where_it_answers():
    assert serving_for().ready_path == "/v1/health/ready" and serving_for().metrics_path == "/v1/metrics"
    assert serving_for("sglang").metrics_path == "/metrics"
    assert set(SERVING) == {"vllm", "sglang"}
    assert all(serving.counters.holds(page) for serving, page in zip(SERVING.values(), (VLLM_PAGE, SGLANG_PAGE)))
