"""The LeaderWorkerSet on vLLM's own multi-node launch: the resource against the LWS CRD's schema, the
leader and the workers planned from their real commands (rank 0 serving, workers headless with their
rank, no Ray), a model that needs both nodes with the RDMA device on each, and the leader's bounded wait
for its workers run as the shell script it is. test_k8s_prefetch.py runs the pre-fetch of both pods."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import jsonschema
import pytest
from k8s_manifests import K8S_DIR, by_kind, container_env, container_named, documents, pod_specs
from lws_schema import LWS_V1_SCHEMA
from test_k8s_plans import _spec_arg, plan

LWS_FILE = K8S_DIR / "multinode" / "leaderworkerset.yaml"
CONFIGS = Path(__file__).resolve().parents[1] / "data" / "model_configs"
LEADER_ADDRESS = "nim-specdec-multinode-0.nim-specdec-multinode.nim-specdec"
# One node: 8 GPUs of the largest memory the manifests name (H200, 141 GB), of which vLLM takes 90 %
# (--gpu-memory-utilization's default).
NODE_GPU_BYTES = 8 * 141e9
USABLE = 0.9
# What the LWS controller sets in every pod of group 0 (worker 1 shown).
LWS_ENV = {"LWS_LEADER_ADDRESS": LEADER_ADDRESS, "LWS_GROUP_SIZE": "2", "LWS_WORKER_INDEX": "1"}


def _lws() -> tuple[list[dict], dict, dict[str, dict]]:
    docs = documents(LWS_FILE)
    lws = by_kind(docs, "LeaderWorkerSet")[0]
    return docs, lws, dict(pod_specs(lws))


def _script_argv(container: dict, env: dict[str, str], tmp_path: Path) -> list[str]:
    """The argv the container's `sh -c` script hands to nim-specdec, the script run by sh with `nim-specdec`
    (and `getent`, which resolves every name) as recorders on PATH."""
    bin_dir = tmp_path / f"bin-{container['name']}"
    bin_dir.mkdir()
    _stub(bin_dir, "getent", 'echo "10.0.0.2 $2"\n')
    _stub(bin_dir, "nim-specdec", f'printf "%s\\n" "$@" > "{bin_dir}/argv"\n')
    done = subprocess.run(
        ["sh", "-c", container["command"][2], container["command"][3], *container["args"]],
        env={**os.environ, **env, "PATH": f"{bin_dir}:/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    return (bin_dir / "argv").read_text().splitlines()


def test_the_resource_validates_against_the_lws_crd_schema() -> None:
    _, lws, _ = _lws()
    jsonschema.validate(lws, LWS_V1_SCHEMA)
    # The schema refuses what the CRD refuses: a misspelt field, an unknown restart policy, a size of 0.
    for path, value in (
        (("spec", "leaderWorkerTemplate", "sise"), 2),
        (("spec", "leaderWorkerTemplate", "restartPolicy"), "Always"),
        (("spec", "leaderWorkerTemplate", "size"), 0),
    ):
        broken = json.loads(json.dumps(lws))
        node = broken
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(broken, LWS_V1_SCHEMA)


def test_no_ray_anywhere() -> None:
    text = LWS_FILE.read_text()
    body = text[text.index("apiVersion:") :]
    assert "ray" not in body.lower().replace("array", ""), "vLLM's own multi-node launch: no Ray"


def test_leader_is_rank_0_and_workers_are_headless_with_their_rank(tmp_path: Path) -> None:
    docs, lws, pods = _lws()
    leader, worker = pods["leader"]["containers"][0], container_named(pods["worker"], "worker")
    env = {**container_env(leader, docs), **LWS_ENV}
    leader_argv = _script_argv(leader, env, tmp_path)
    worker_argv = _script_argv(worker, {**container_env(worker, docs), **LWS_ENV}, tmp_path)
    assert leader_argv[:1] == worker_argv[:1] == ["serve"]
    size = lws["spec"]["leaderWorkerTemplate"]["size"]
    assert _spec_arg(leader_argv, "--nnodes") == _spec_arg(worker_argv, "--nnodes") == str(size)
    assert _spec_arg(leader_argv, "--node-rank") == "0" and _spec_arg(worker_argv, "--node-rank") == "1"
    assert _spec_arg(leader_argv, "--master-addr") == _spec_arg(worker_argv, "--master-addr") == LEADER_ADDRESS
    assert _spec_arg(leader_argv, "--master-port") == _spec_arg(worker_argv, "--master-port") == env["MASTER_PORT"]
    assert "--headless" in worker_argv and "--headless" not in leader_argv

    leader_plan, _ = plan(container_env(leader, docs), leader_argv[1:])
    worker_plan, _ = plan(container_env(worker, docs), worker_argv[1:])
    assert _spec_arg(leader_plan["argv"], "--distributed-executor-backend") == "mp"
    assert (
        int(_spec_arg(leader_plan["argv"], "--tensor-parallel-size"))
        * int(_spec_arg(leader_plan["argv"], "--pipeline-parallel-size"))
        == int(leader["resources"]["limits"]["nvidia.com/gpu"]) * size
    )
    # The same model and draft at the same paths on every node: vLLM's workers open them there.
    assert leader_plan["speculative"]["method"] == worker_plan["speculative"]["method"] == "eagle3"
    for key in ("target", "draft"):
        assert leader_plan[key]["source"] == worker_plan[key]["source"]
    assert leader_plan["target"]["model"] == worker_plan["target"]["model"]
    assert leader_plan["draft"]["path"] == worker_plan["draft"]["path"]
    assert "--headless" in worker_plan["argv"] and "--port" in leader_plan["argv"]


def _weight_bytes(config: dict) -> float:
    """Weights of a DeepSeek-V3-shaped MoE checkpoint at one byte per parameter (FP8): embeddings, attention
    (MLA), dense and routed-expert MLPs, head."""
    h, layers, vocab = config["hidden_size"], config["num_hidden_layers"], config["vocab_size"]
    heads, nope = config["num_attention_heads"], config["qk_nope_head_dim"]
    rope, v = config["qk_rope_head_dim"], config["v_head_dim"]
    q_rank, kv_rank = config["q_lora_rank"], config["kv_lora_rank"]
    attention = h * q_rank + q_rank * heads * (nope + rope) + h * (kv_rank + rope) + kv_rank * heads * (nope + v)
    attention += heads * v * h
    dense = 3 * h * config["intermediate_size"]
    experts = 3 * h * config["moe_intermediate_size"] * (config["n_routed_experts"] + config["n_shared_experts"])
    moe_layers = layers - config["first_k_dense_replace"]
    return 2 * vocab * h + layers * attention + config["first_k_dense_replace"] * dense + moe_layers * experts


def test_the_model_needs_both_nodes_and_each_pod_a_whole_node_with_rdma() -> None:
    docs, lws, pods = _lws()
    leader = pods["leader"]["containers"][0]
    plan_, _ = plan(container_env(leader, docs), leader["args"])
    repo = plan_["target"]["source"].removeprefix("hf://")
    config = json.loads((CONFIGS / repo.replace("/", "--") / "config.json").read_text())
    assert config["quantization_config"]["quant_method"] == "fp8"
    weights = _weight_bytes(config)
    assert weights > NODE_GPU_BYTES * USABLE, f"{repo}: {weights / 1e9:.0f} GB of weights fit one node"
    assert weights < 2 * NODE_GPU_BYTES * USABLE * 0.7, "two nodes leave room for the KV cache"
    for role, pod in pods.items():
        server = pod["containers"][0]
        for key in ("requests", "limits"):
            assert server["resources"][key]["nvidia.com/gpu"] == 8, role
            assert server["resources"][key]["rdma/rdma_shared_device_a"] == 1, role
        env = container_env(server, docs)
        assert env["NCCL_SOCKET_IFNAME"] == "eth0" and env["NCCL_IB_HCA"], role


def _stub(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _run_leader(tmp_path: Path, resolvable_after: int, attempts: int) -> tuple[subprocess.CompletedProcess[str], Path]:
    """The leader's script with `getent` answering after `resolvable_after` failed lookups and `nim-specdec`
    recording its argv: the loop's logic, not the cluster's DNS, is what runs here."""
    docs, _, pods = _lws()
    leader = pods["leader"]["containers"][0]
    bin_dir, calls = tmp_path / "bin", tmp_path / "calls"
    bin_dir.mkdir()
    calls.write_text("")
    _stub(
        bin_dir,
        "getent",
        f'echo "$2" >> "{calls}"\n[ "$(wc -l < "{calls}")" -gt {resolvable_after} ] && echo "10.0.0.2 $2"\n',
    )
    _stub(bin_dir, "nim-specdec", f'printf "%s\\n" "$@" > "{tmp_path}/argv"\n')
    env = {
        **container_env(leader, docs),
        **LWS_ENV,
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "WORKER_WAIT_ATTEMPTS": str(attempts),
        "WORKER_WAIT_SECONDS": "0",
    }
    done = subprocess.run(
        ["sh", "-c", leader["command"][2], leader["command"][3], *leader["args"]],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done, calls


def test_leader_waits_through_failed_lookups_then_serves_as_rank_0(tmp_path: Path) -> None:
    done, calls = _run_leader(tmp_path, resolvable_after=3, attempts=10)
    assert done.returncode == 0, done.stderr
    assert calls.read_text().splitlines() == ["nim-specdec-multinode-0-1.nim-specdec-multinode.nim-specdec"] * 4
    argv = (tmp_path / "argv").read_text().splitlines()
    assert argv[0] == "serve" and _spec_arg(argv, "--node-rank") == "0"


def test_leader_gives_up_after_its_attempts_with_one_line_exit_4(tmp_path: Path) -> None:
    done, calls = _run_leader(tmp_path, resolvable_after=1000, attempts=3)
    assert done.returncode == 4
    assert len(calls.read_text().splitlines()) == 3, "bounded: one lookup per attempt"
    assert not (tmp_path / "argv").exists(), "no server started"
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "after 3 tries" in lines[0] and "nim-specdec-multinode-0-1" in lines[0]
