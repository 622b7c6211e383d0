"""`draft train` against a real vLLM server of the demo target (marked e2e: one server start, then a second to
serve the result).

test_flow_*: the flow's own logic (regeneration through vLLM with token ids, the split on disk, the export
put in place and checked, the one line) with a stand-in trainer that copies the demo's EAGLE3 head and trains
nothing; it says so in its result. test_trains_*: the real training stage (nim_specdec_lab.draft.training) on
its learnable demo target (demo-model --learnable), a few steps, then the exported draft served through
NIM_DRAFT_MODEL_PATH with the guide's bare name: it loads and drafts. That test needs the training stage installed
and fails loudly without it."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nim_specdec_lab.draft.capture_input import parse_draft_capture
from nim_specdec_lab.draft.flow import DraftOptions, made_line, train_from_capture
from nim_specdec_lab.draft.trainer_seam import DraftJob, Trained
from nim_specdec_lab.server_process import ServerSpec, running_server
from vllm_runs import SERVER_ARGS, demo_env

pytestmark = pytest.mark.e2e
SRC = Path(__file__).resolve().parents[3] / "src"
WORDS = "river stone cloud seven apple garden quiet number yellow market engine winter".split()


def varied_capture(path: Path, n: int = 40) -> Path:
    rng = random.Random(11)
    lines = []
    for i in range(n):
        prompt = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9)))
        body = {
            "model": "demo",
            "messages": [{"role": "user", "content": f"{i}: {prompt}"}],
            "max_tokens": 24,
            "temperature": 1.0,
            "seed": i,
        }
        lines.append(json.dumps({"timestamp": i * 50, "payload": body}))
    path.write_text("\n".join(lines) + "\n")
    return path


def _served(target: Path, demo_model: Path, workdir: Path):
    env = {**demo_env(demo_model, workdir, NIM_SPECDEC_ENABLE="0"), "NIM_MODEL_PATH": str(target)}
    spec = ServerSpec(env=env, args=SERVER_ARGS, ready_timeout_s=420, log_path=workdir / "server.log")
    return running_server(spec)


@pytest.fixture
def target_server(demo_model, tmp_path_factory):
    with _served(demo_model / "target", demo_model, tmp_path_factory.mktemp("draft-target")) as server:
        yield server


@pytest.fixture(scope="module")
def learnable(tmp_path_factory) -> Path:
    """The training stage's learnable demo target (demo-model --learnable): 4 layers, one successor cycle."""
    root = tmp_path_factory.mktemp("learnable")
    subprocess.run(
        [sys.executable, "-m", "nim_specdec", "demo-model", str(root), "--learnable"],
        check=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=600, capture_output=True,
    )  # fmt: skip
    return root / "learnable"


@pytest.fixture
def learnable_server(learnable, demo_model, tmp_path_factory):
    with _served(learnable, demo_model, tmp_path_factory.mktemp("draft-learnable")) as server:
        yield server


class StandInTrainer:
    """Test-only: copies the demo's untrained EAGLE3 head. It trains nothing; it lets the flow's own logic
    be tested where the training stage is not installed."""

    def __init__(self, head: Path) -> None:
        self.head = head
        self.jobs: list[DraftJob] = []

    def check_target(self, target, where, aux) -> None:
        pass

    def _copy(self, job: DraftJob) -> Trained:
        assert not job.output_dir.exists()  # the stage makes it whole
        shutil.copytree(self.head, job.output_dir)
        return Trained(job.output_dir, 0, None, 0, 0.0, "none (stand-in)", "stand-in", (0, 1, 2))

    def train(self, job: DraftJob, on_progress) -> Trained:
        self.jobs.append(job)
        on_progress("step 1/1 (stand-in: nothing trained)")
        return self._copy(job)

    def export_untrained(self, job: DraftJob) -> Trained:
        self.jobs.append(job)
        return self._copy(job)


def test_flow_regenerates_with_token_ids_and_puts_a_checked_draft_in_place(target_server, demo_model, tmp_path):
    capture = varied_capture(tmp_path / "capture.jsonl")
    out = tmp_path / "out"
    trainer = StandInTrainer(demo_model / "draft-eagle3")
    said: list[str] = []
    options = DraftOptions(
        capture=capture, target=str(demo_model / "target"), out=out, url=target_server.url, measure=False, k=3
    )
    made = train_from_capture(options, os.environ, lambda: trainer, said.append)

    job, untrained_job = trainer.jobs
    assert untrained_job.work_dir != job.work_dir  # the untrained export never resumes the trained checkpoints
    rows = [json.loads(line) for line in job.data_file.read_text().splitlines()]
    split = json.loads((out / "work" / "split.json").read_text())
    assert [r["id"] for r in rows] == split["train"] and len(split["held_out"]) >= 2
    held = parse_draft_capture((out / "work" / "measure" / "held-out.jsonl").read_text().splitlines(), 1)
    assert [r.id for r in held.requests] == split["held_out"]
    for row in rows:
        assert set(row) == {"id", "messages", "prompt_token_ids", "output_token_ids"}
        assert row["messages"][-1]["role"] == "assistant" and row["output_token_ids"]
        assert all(isinstance(t, int) for t in row["prompt_token_ids"] + row["output_token_ids"])
    assert job.aux_layer_ids is None and job.target_dir == demo_model / "target"  # the stage chooses the layers
    assert (out / "draft" / "config.json").is_file() and (out / "untrained" / "config.json").is_file()
    assert not list((out / "work").glob("*.partial"))
    assert any("regenerating with the target" in line for line in said)
    line = made_line(made)
    assert f"NIM_DRAFT_MODEL_PATH={out / 'draft'}" in line and '"model": "eagle3_draft"' in line

    # A rerun of the same split reuses the answers instead of asking the target again.
    said.clear()
    trainer.jobs.clear()
    train_from_capture(options, os.environ, lambda: trainer, said.append)
    assert any("reusing the regenerated answers" in line for line in said)


def test_trains_a_small_draft_that_vllm_loads_and_drafts_with(learnable_server, learnable, demo_model, tmp_path):
    capture = varied_capture(tmp_path / "capture.jsonl")
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.run(
        [sys.executable, "-m", "nim_specdec", "draft", "train", str(capture), "--target", str(learnable),
         "--out", str(out), "--url", learnable_server.url, "--steps", "3", "--no-measure", "--max-seq-len", "256"],
        env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("\n") == 1 and "serve it: NIM_MODEL_PATH=" in proc.stdout
    assert "training: step 3/3" in proc.stderr  # the stage's progress reached the person running it
    draft = out / "draft"
    config = json.loads((draft / "config.json").read_text())
    assert config and list(draft.glob("*.safetensors"))
    assert not list((out / "work").glob("*.partial"))

    serve_env = {
        **demo_env(demo_model, tmp_path / "serve", NIM_SPECDEC_ENABLE="1", NIM_DRAFT_MODEL_PATH=str(draft)),
        "NIM_MODEL_PATH": str(learnable),
    }
    spec_config = json.dumps({"method": "eagle3", "model": "eagle3_draft", "num_speculative_tokens": 3})
    learnable_server.stop()  # one vLLM server at a time on a small machine
    spec = ServerSpec(
        env=serve_env, args=(*SERVER_ARGS, "--speculative-config", spec_config), ready_timeout_s=420,
        log_path=tmp_path / "serve.log",
    )  # fmt: skip
    from nim_specdec_lab.ngram.http_replay import http_json
    from nim_specdec_lab.replay.measure import scrape_metrics
    from nim_specdec_lab.replay.results import spec_growth

    with running_server(spec) as server:  # the guide's local-draft example: bare name, NIM_DRAFT_MODEL_PATH
        before = scrape_metrics(server.url + "/metrics")
        body = {"model": "demo", "messages": [{"role": "user", "content": "river stone"}], "max_tokens": 32}
        http_json(server.url + "/v1/chat/completions", body)
        growth = spec_growth(before, scrape_metrics(server.url + "/metrics"))
    assert growth is not None and growth.drafts > 0, server.log_text()[-3000:]
