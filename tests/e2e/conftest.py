"""End-to-end fixtures: each launches `nim-specdec serve` (which execs a real vLLM server on the CPU),
drives the fixed workload, stops the server with SIGTERM and hands the record to the tests.

A run is a session fixture, so the tests that read it share one server, and a server is stopped
before the next starts: never two vLLM servers at a time on a small machine.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from nim_specdec.tools.demo_model import make_demo_model

from .launcher_proc import LauncherServer
from .workload import RunRecord, exercise, run_to_model_length

pytestmark = pytest.mark.e2e

GUIDE_NGRAM_ARGS = json.dumps(
    {"speculative_config": json.dumps({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 1})}
)


@pytest.fixture(scope="session")
def demo_model(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("demo-model")
    make_demo_model(root)
    return root


@pytest.fixture(scope="session")
def e2e_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("e2e")


def base_env(cache: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NIM_")}
    env.update(
        HF_HUB_OFFLINE="1",
        VLLM_CPU_KVCACHE_SPACE="1",
        NIM_CACHE_PATH=str(cache / "cache"),
        NIM_WORKSPACE=str(cache / "workspace"),
    )
    return env


def launch(name: str, env: dict, args: list[str], workdir: Path, smoke: bool | None = None, probe=None) -> RunRecord:
    """Start, exercise, stop; the server never outlives this call."""
    record = RunRecord(name=name, env={k: v for k, v in env.items() if k.startswith(("NIM_", "VLLM_"))}, args=args)
    server = LauncherServer(name, env, args, workdir / f"{name}.log")
    try:
        server.start()  # its failures carry the log already
        try:
            if probe is not None:
                probe(server, record)
            else:
                exercise(server, record, workdir, smoke_expect_spec=smoke)
            record.stop = server.stop()
        except AssertionError as err:
            raise server.fail(str(err)) from None
    finally:
        server.kill()
        record.log = server.log_text()
    return record


@pytest.fixture(scope="session")
def ngram_run(demo_model, e2e_dir) -> RunRecord:
    """The guide's n-gram override. NIM_DRAFT_MODEL_PATH names a draft too, so without the override the
    model-free auto choice would be draft_model: the run shows NIM_SPECDEC_ARGS switching the method."""
    env = base_env(e2e_dir / "ngram")
    env.update(
        NIM_MODEL_PATH=str(demo_model / "target"),
        NIM_SPECDEC_ENABLE="1",
        NIM_SPECDEC_ARGS=GUIDE_NGRAM_ARGS,
        NIM_DRAFT_MODEL_PATH=str(demo_model / "draft-other"),
    )

    def probe(server: LauncherServer, record: RunRecord) -> None:
        exercise(server, record, e2e_dir, smoke_expect_spec=True)
        run_to_model_length(server.base, record, k=3, min_n=1, max_n=4)

    return launch("ngram", env, [], e2e_dir, probe=probe)


@pytest.fixture(scope="session")
def off_run(demo_model, e2e_dir) -> RunRecord:
    env = base_env(e2e_dir / "off")
    env.update(NIM_MODEL_PATH=str(demo_model / "target"), NIM_SPECDEC_ENABLE="0")
    return launch("off", env, [], e2e_dir, smoke=False)


DRAFT_MODEL_CONFIG = {"method": "draft_model", "model": "my_draft", "num_speculative_tokens": 3}


@pytest.fixture(scope="session")
def draft_run(demo_model, e2e_dir) -> RunRecord:
    """Model-free mode, the config given as a vLLM argument, a local draft that is a copy of the target."""
    env = base_env(e2e_dir / "draft")
    env.update(NIM_MODEL_PATH=str(demo_model / "target"), NIM_DRAFT_MODEL_PATH=str(demo_model / "draft-copy"))
    return launch("draft", env, ["--speculative-config", json.dumps(DRAFT_MODEL_CONFIG)], e2e_dir)


EAGLE3_CONFIG = {"method": "eagle3", "model": "eagle3_draft", "num_speculative_tokens": 3}


@pytest.fixture(scope="session")
def eagle3_run(demo_model, e2e_dir) -> RunRecord:
    """The guide's EAGLE3 example, with the demo's random EAGLE3 draft as a local directory."""
    env = base_env(e2e_dir / "eagle3")
    env.update(NIM_MODEL_PATH=str(demo_model / "target"), NIM_DRAFT_MODEL_PATH=str(demo_model / "draft-eagle3"))
    return launch("eagle3", env, ["--speculative-config", json.dumps(EAGLE3_CONFIG)], e2e_dir)
