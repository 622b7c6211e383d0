"""The leader's and the worker's start, read from deploy/k8s/multinode/leaderworkerset.yaml itself: the
container's `sh -c` script, its vLLM arguments, the ConfigMap's environment and what the LWS controller
sets (LWS_LEADER_ADDRESS, LWS_GROUP_SIZE, LWS_WORKER_INDEX). A change to the manifest changes this run.

What the manifest fixes for a GPU cluster and a 70B model is replaced, and only that: the model (the demo
model), the parallel sizes (two CPU processes: one rank per node), the cache and workspace folders (one per
host), the wait's attempts (so the harness's bound is short), and the server options every test server gets.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from deploy.k8s_manifests import K8S_DIR, by_kind, container_env, container_named, documents

LWS_FILE = K8S_DIR / "multinode" / "leaderworkerset.yaml"
# LWS names the leader pod <set>-<group> and worker i <set>-<group>-<i>, under the set's headless service.
NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 1}
# Options every e2e server of the project gets (tests/vllm_runs.py: SERVER_ARGS): small, eager, seeded.
SMALL_SERVER = ("--max-model-len", "384", "--max-num-seqs", "4", "--seed", "0", "--enforce-eager")
SIZES = {"--tensor-parallel-size": "1", "--pipeline-parallel-size": "2"}


@dataclass(frozen=True)
class RankStart:
    role: str  # "leader" or "worker"
    argv: tuple[str, ...]  # sh -c SCRIPT NAME ARGS...
    env: Mapping[str, str]


@dataclass(frozen=True)
class Group:
    name: str
    size: int
    leader_address: str
    worker_address: str
    leader_pod: str
    worker_pod: str
    leader: RankStart
    worker: RankStart


def _vllm_args(args: Sequence[str], sizes: Mapping[str, str]) -> list[str]:
    out, items = [], list(args)
    i = 0
    while i < len(items):
        if items[i] in sizes:
            out += [items[i], sizes[items[i]]]
            i += 2
            continue
        out.append(items[i])
        i += 1
    return out


def group(
    model: Path,
    served_name: str,
    folders: Mapping[str, Path],
    wait: tuple[int, int],
    sizes: Mapping[str, str] | None = None,
    extra_env: Mapping[str, str] = {},
    extra_args: Sequence[str] = (),
) -> Group:
    """Group 0 of the LeaderWorkerSet, with the replacements the module names. `folders[role]` is that host's
    own disk; `wait` is (WORKER_WAIT_ATTEMPTS, WORKER_WAIT_SECONDS)."""
    docs = documents(LWS_FILE)
    (lws,) = by_kind(docs, "LeaderWorkerSet")
    template = lws["spec"]["leaderWorkerTemplate"]
    name, size = lws["metadata"]["name"], int(template["size"])
    (service,) = [d for d in by_kind(docs, "Service") if d["metadata"]["name"] == name]
    subdomain = service["metadata"]["name"]
    leader_pod, worker_pod = f"{name}-0", f"{name}-0-1"
    leader_address, worker_address = f"{leader_pod}.{subdomain}", f"{worker_pod}.{subdomain}"
    starts = {}
    for role, pod, index in (
        ("leader", template["leaderTemplate"]["spec"], "0"),
        ("worker", template["workerTemplate"]["spec"], "1"),
    ):
        container = container_named(pod, role)
        command = container["command"]
        assert command[:2] == ["sh", "-c"], f"the {role} starts through its shell script"
        env = {k: v for k, v in container_env(container, docs).items() if k not in ("NIM_MODEL_NAME", "HF_TOKEN")}
        env.pop("NGC_API_KEY", None)
        env.update(
            LWS_LEADER_ADDRESS=leader_address,
            LWS_GROUP_SIZE=str(size),
            LWS_WORKER_INDEX=index,
            LWS_NAME=name,
            LWS_GROUP_INDEX="0",
            NIM_MODEL_PATH=str(model),
            NIM_SERVED_MODEL_NAME=served_name,
            NIM_SPECDEC_ARGS=json.dumps({"speculative_config": json.dumps(NGRAM)}),
            NIM_CACHE_PATH=str(folders[role] / "cache"),
            NIM_WORKSPACE=str(folders[role] / "scratch" / "workspace"),
            WORKER_WAIT_ATTEMPTS=str(wait[0]),
            WORKER_WAIT_SECONDS=str(wait[1]),
            HF_HUB_OFFLINE="1",
            VLLM_CPU_KVCACHE_SPACE="1",
            **extra_env,
        )
        args = [*_vllm_args(container["args"], sizes or SIZES), *SMALL_SERVER, *extra_args]
        starts[role] = RankStart(role, (*command, *args), env)
    return Group(name, size, leader_address, worker_address, leader_pod, worker_pod, starts["leader"], starts["worker"])
