"""The harness starts the ranks the manifest's way: read from the YAML, with only the named replacements."""

from __future__ import annotations

from pathlib import Path

from lws_launch import LWS_FILE, SMALL_SERVER, group

from deploy.k8s_manifests import by_kind, container_env, container_named, documents


def test_each_rank_starts_with_its_containers_script_configmap_and_lws_variables(tmp_path: Path) -> None:
    docs = documents(LWS_FILE)
    (lws,) = by_kind(docs, "LeaderWorkerSet")
    template = lws["spec"]["leaderWorkerTemplate"]
    folders = {"leader": tmp_path / "l", "worker": tmp_path / "w"}
    made = group(tmp_path / "model", "demo", folders, (7, 2), {"--tensor-parallel-size": "2"})
    for start, pod, index in (
        (made.leader, template["leaderTemplate"]["spec"], "0"),
        (made.worker, template["workerTemplate"]["spec"], "1"),
    ):
        container = container_named(pod, start.role)
        script = container["command"]
        assert list(start.argv[: len(script)]) == script, "the container's own sh -c script and its $0"
        args = list(start.argv[len(script) :])
        manifest_args = container["args"]
        assert args[args.index("--tensor-parallel-size") + 1] == "2"
        assert args[args.index("--distributed-executor-backend") + 1] == "mp"
        assert args[len(manifest_args) :] == list(SMALL_SERVER)
        configmap = container_env(container, docs)
        replaced = {"NIM_MODEL_NAME", "NIM_CACHE_PATH", "NIM_WORKSPACE", "WORKER_WAIT_ATTEMPTS", "WORKER_WAIT_SECONDS"}
        for key, value in configmap.items():
            if key not in replaced and key not in ("HF_TOKEN", "NGC_API_KEY"):
                assert start.env[key] == value, key
        assert "NIM_MODEL_NAME" not in start.env and start.env["NIM_MODEL_PATH"] == str(tmp_path / "model")
        assert (start.env["WORKER_WAIT_ATTEMPTS"], start.env["WORKER_WAIT_SECONDS"]) == ("7", "2")
        assert start.env["NIM_CACHE_PATH"].startswith(str(folders[start.role])), "each host its own cache"
        assert start.env["LWS_WORKER_INDEX"] == index and start.env["LWS_GROUP_SIZE"] == str(template["size"])
        assert start.env["LWS_LEADER_ADDRESS"] == made.leader_address
    assert made.worker_address.startswith(f"{made.leader_pod}-1.")
