"""Process and endpoint behaviour, checked on every server the suite starts (no server of its own)."""

from __future__ import annotations

import pytest

from nim_specdec.observe.spec_counters import parse_prometheus

from vllm_runs import STOP_TIMEOUT_S

pytestmark = pytest.mark.e2e

RUNS = ("ngram_run", "off_run", "eagle3_run", "remote_run")
SERVER_MODULE = "vllm.entrypoints.openai.api_server"
BOOT_MODULE = "nim_specdec.launch.vllm_boot"


@pytest.fixture(params=RUNS)
def run(request):
    return request.getfixturevalue(request.param)


def test_launcher_pid_became_vllm(run):
    # The pid the launcher was started as runs the vLLM server: the launcher exec'd, no wrapper stayed.
    # With local files the check runs in that process first (vllm_boot), then vLLM's server module in
    # the same Python; the remote run was checked while it downloaded, so it runs the server directly.
    cmdline = run.stop.cmdline_before
    if run.name == "remote":
        assert cmdline[1:3] == ["-m", SERVER_MODULE], f"{cmdline}" + run.context()
        assert "nim-specdec: vLLM check while downloading" in run.log and "vLLM check passed" not in run.log
    else:
        assert cmdline[1:3] == ["-m", BOOT_MODULE] and cmdline[4:6] == ["-m", SERVER_MODULE], (
            f"{cmdline}" + run.context()
        )
        assert "nim-specdec: vLLM check passed in" in run.log
    assert f"(APIServer pid={run.stop.pid})" in run.log


def test_sigterm_stops_the_server_cleanly(run):
    stop = run.stop
    assert not stop.killed, f"still running {STOP_TIMEOUT_S:.0f} s after SIGTERM" + run.context()
    assert stop.returncode == 0, f"exit code {stop.returncode} after SIGTERM" + run.context()
    assert stop.group_gone, "engine processes outlived the server" + run.context()
    assert "[shutdown] API server: shutdown triggered" in run.log


def test_ready_is_refused_or_503_until_the_model_answers(run):
    statuses = run.ready_statuses
    assert statuses and statuses[-1] == 200, f"{statuses}" + run.context()
    assert set(statuses[:-1]) <= {0, 503}, f"before ready: {sorted(set(statuses[:-1]))}" + run.context()


def test_v1_endpoints(run):
    endpoints = run.endpoints
    assert endpoints["/v1/health/live"] == (200, '{"status": "live"}')
    assert endpoints["/v1/health/ready"][0] == 200 and '"ready"' in endpoints["/v1/health/ready"][1]
    status, text = endpoints["/v1/metrics"]
    assert status == 200 and "# TYPE" in text

    # The same Prometheus text as /metrics: the same series, scraped a moment apart.
    def names(body):
        return {line.split("{")[0].split(" ")[0] for line in body.splitlines() if line and not line.startswith("#")}

    assert names(text) == names(endpoints["/metrics"][1])
    assert parse_prometheus(text).keys() == parse_prometheus(endpoints["/metrics"][1]).keys()
