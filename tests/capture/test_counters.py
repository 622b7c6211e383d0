"""The counters under prometheus_client's multiprocess mode, as vLLM uses it with several API servers."""

from __future__ import annotations

import os
import subprocess
import sys

from prometheus_client import CollectorRegistry, generate_latest, multiprocess

CHILD = """
from nim_specdec.capture.counters import capture_counters
c = capture_counters()
c.add_written({n}, 100 * {n})
c.add_dropped("queue_full", {n})
"""


def test_counts_of_several_processes_are_summed_on_one_registry(tmp_path):
    # Each child stands for one API server process: PROMETHEUS_MULTIPROC_DIR is set before it
    # imports prometheus_client, as vLLM sets it before spawning the API servers.
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    for n in (2, 5):
        subprocess.run([sys.executable, "-c", CHILD.format(n=n)], env=env, check=True, timeout=60)
    registry = CollectorRegistry()  # what vLLM's get_prometheus_registry() builds in that mode
    multiprocess.MultiProcessCollector(registry, path=str(tmp_path))
    assert registry.get_sample_value("nim_capture_records_written_total") == 7
    assert registry.get_sample_value("nim_capture_bytes_written_total") == 700
    assert registry.get_sample_value("nim_capture_records_dropped_total", {"reason": "queue_full"}) == 7
    assert registry.get_sample_value("nim_capture_records_dropped_total", {"reason": "not_json"}) == 0
    assert b"nim_capture_records_written_total 7.0" in generate_latest(registry)
