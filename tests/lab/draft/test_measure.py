"""The measurement's inputs for bench --serve: each configuration's variables, its argv, its environment."""

from __future__ import annotations

import json
from pathlib import Path

from nim_specdec_lab.bench.env_file import parse_env_file
from nim_specdec_lab.draft.measure import MeasureJob, bench_argv, bench_environment, bench_sides, side_envs

JOB = MeasureJob(
    Path("/t"),
    Path("/o/draft"),
    Path("/o/untrained"),
    Path("/o/h.jsonl"),
    Path("/o/b"),
    3,
    2,
    ("--max-model-len", "512"),
)


def test_each_draft_is_served_as_the_guide_says():
    envs = side_envs(JOB)
    for name, path in (("trained", "/o/draft"), ("untrained", "/o/untrained")):
        assert envs[name]["NIM_DRAFT_MODEL_PATH"] == path and envs[name]["NIM_SPECDEC_ENABLE"] == "1"
        spec = json.loads(envs[name]["NIM_SPECDEC_ARGS"])["speculative_config"]
        assert spec == {"method": "eagle3", "model": "eagle3_draft", "num_speculative_tokens": 3}
    assert "NIM_DRAFT_MODEL_PATH" not in envs["ngram"] and envs["off"]["NIM_SPECDEC_ENABLE"] == "0"
    # both drafts go by the same bare name: each side links it in a workspace of its own
    assert len({env["NIM_WORKSPACE"] for env in envs.values()}) == 4
    assert json.loads(envs["ngram"]["NIM_SPECDEC_ARGS"])["speculative_config"]["method"] == "ngram"


def test_env_files_read_back_as_bench_reads_them():
    for values in side_envs(JOB).values():
        lines = [f"{k}={v}" for k, v in values.items()]
        assert parse_env_file(lines, "--candidate", "f", {}) == values


def test_argv_names_the_candidates_in_the_sides_order():
    files = {n: Path(f"/e/{n}.env") for n in ("off", "trained", "untrained", "ngram")}
    argv = bench_argv(JOB, files)
    candidates = [argv[i + 1] for i, a in enumerate(argv) if a == "--candidate"]
    assert candidates == ["/e/trained.env", "/e/untrained.env", "/e/ngram.env"]
    assert list(bench_sides()) == ["trained", "untrained", "ngram"]
    assert argv[argv.index("--baseline") + 1] == "/e/off.env" and argv[-3:] == ["--", "--max-model-len", "512"]


def test_no_side_inherits_a_draft_from_the_environment():
    env = bench_environment({"NIM_DRAFT_MODEL_PATH": "/x", "NIM_SPECDEC_ENABLE": "1", "HOME": "/h"}, Path("/t"))
    assert env == {"HOME": "/h", "NIM_MODEL_PATH": "/t"}
