"""`nim-specdec simulate` on saved records: one row per setting with its keys and predictions,
recommendations per method and overall, and one-line errors for bad input."""

from __future__ import annotations

import subprocess
import sys

import pytest

import strict_json
from nim_specdec.config.specdec_args import parse_specdec_args
from nim_specdec_lab.ngram.corpus import RecordedRequest
from nim_specdec_lab.ngram.http_replay import save_records
from nim_specdec_lab.suffix.simulator import SuffixParams, simulate_suffix

NGRAM_KEYS = {"num_speculative_tokens", "prompt_lookup_min", "prompt_lookup_max"}
SUFFIX_KEYS = {
    "num_speculative_tokens",
    "suffix_decoding_max_tree_depth",
    "suffix_decoding_max_cached_requests",
    "suffix_decoding_max_spec_factor",
    "suffix_decoding_min_token_prob",
}
FIGURES = {"drafts", "draft_tokens", "accepted_tokens", "acceptance_rate", "acceptance_length"}
RECORDS = [
    RecordedRequest.of([1, 2, 3, 4, 1, 2], [3, 4, 1, 2, 3, 4, 1, 2, 3], [4, 1, 2]),
    RecordedRequest.of([9, 8], [5, 6, 7, 5, 6, 7, 5, 6, 7, 5], [6, 7, 5]),
    RecordedRequest.of([9, 9], [5, 6, 7, 5, 6, 7, 5, 6, 7, 5], [6, 7, 5]),
]


def _cli(*args, command="simulate"):
    return subprocess.run(
        [sys.executable, "-m", "nim_specdec", command, *args], capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def records(tmp_path):
    path = tmp_path / "records.jsonl"
    save_records(str(path), RECORDS, 4096)
    return path


def test_rows_and_recommendations(records, tmp_path):
    report = tmp_path / "report.json"
    proc = _cli(
        "--records",
        str(records),
        "--ngram-k",
        "1-3",
        "--ngram-min",
        "1",
        "--ngram-max",
        "1-2",
        "--suffix-k",
        "2,4",
        "--suffix-cached",
        "0,10",
        "--json",
        str(report),
    )
    assert proc.returncode == 0, proc.stderr
    data = strict_json.loads(report.read_text())
    assert data["methods"] == ["ngram", "suffix"] and data["max_model_len"] == 4096
    rows = data["grid"]
    assert len(rows) == 6 + 4
    for row in rows:
        keys = NGRAM_KEYS if row["method"] == "ngram" else SUFFIX_KEYS
        assert keys | FIGURES | {"method"} <= set(row)
    # Each suffix row is what the library-driven simulator predicts for that setting.
    for row in (r for r in rows if r["method"] == "suffix"):
        params = SuffixParams(
            row["num_speculative_tokens"],
            row["suffix_decoding_max_tree_depth"],
            row["suffix_decoding_max_cached_requests"],
            row["suffix_decoding_max_spec_factor"],
            row["suffix_decoding_min_token_prob"],
        )
        result = simulate_suffix(RECORDS, params, 4096)
        assert (row["drafts"], row["draft_tokens"], row["accepted_tokens"]) == (
            result.drafts,
            result.draft_tokens,
            result.accepted,
        )
    # The third request repeats the second's response: only the global tree (cached > 0) sees it.
    by_cached = {
        r["suffix_decoding_max_cached_requests"]: r
        for r in rows
        if r["method"] == "suffix" and r["num_speculative_tokens"] == 4
    }
    assert by_cached[10]["accepted_tokens"] > by_cached[0]["accepted_tokens"]

    per_method = data["recommended_per_method"]
    assert set(per_method) == {"ngram", "suffix"}
    for method, rec in per_method.items():
        spec, _ = parse_specdec_args(rec["NIM_SPECDEC_ARGS"])
        assert spec["method"] == method
    best = max(per_method.values(), key=lambda r: r["speedup"])
    assert data["recommended"]["NIM_SPECDEC_ARGS"] == best["NIM_SPECDEC_ARGS"]
    assert "overall (" in proc.stdout and proc.stdout.count("NIM_SPECDEC_ARGS='") == 3


def test_one_method_only(records, tmp_path):
    report = tmp_path / "report.json"
    proc = _cli(
        "--records",
        str(records),
        "--method",
        "suffix",
        "--suffix-k",
        "3",
        "--suffix-cached",
        "5",
        "--suffix-factor",
        "1,2",
        "--suffix-min-prob",
        "0,0.5",
        "--json",
        str(report),
    )
    assert proc.returncode == 0, proc.stderr
    data = strict_json.loads(report.read_text())
    assert data["methods"] == ["suffix"] and len(data["grid"]) == 4
    assert "overall" not in proc.stdout


def test_tune_ngram_is_the_ngram_alias(records, tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert (
        _cli(
            "--records", str(records), "--k", "1-3", "--min", "1", "--max", "2", "--json", str(a), command="tune-ngram"
        ).returncode
        == 0
    )
    assert (
        _cli(
            "--records",
            str(records),
            "--method",
            "ngram",
            "--ngram-k",
            "1-3",
            "--ngram-min",
            "1",
            "--ngram-max",
            "2",
            "--json",
            str(b),
        ).returncode
        == 0
    )
    assert strict_json.loads(a.read_text()) == strict_json.loads(b.read_text())


@pytest.mark.parametrize(
    "args, message",
    [
        (("--method", "eagle"), "--method: unknown method 'eagle'"),
        (("--method", ","), "--method: unknown method"),
        (("--suffix-k", "0"), "--suffix-k: bad value list '0'"),
        (("--suffix-cached", "-1"), "--suffix-cached: bad value list '-1'"),
        (("--suffix-min-prob", "1.5"), "--suffix-min-prob: bad value list '1.5'"),
        (("--suffix-factor", "x"), "--suffix-factor: bad value list 'x'"),
        (("--suffix-factor", "nan"), "--suffix-factor: bad value list 'nan'"),
        (("--ngram-k", "0"), "--ngram-k: bad range"),
    ],
)
def test_bad_input_is_one_line_exit_2(records, args, message):
    proc = _cli("--records", str(records), *args)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_records_without_usable_requests_exit_2(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    proc = _cli("--records", str(empty))
    assert proc.returncode == 2 and "holds no request with output tokens" in proc.stderr
    trace = tmp_path / "trace.jsonl"
    trace.write_text("\n")
    proc = _cli("--trace", str(trace), "--url", "http://127.0.0.1:9")
    assert proc.returncode == 2 and "--trace: the capture holds no requests" in proc.stderr


def test_suffix_on_a_034_gpu_is_the_native_speculator(records, tmp_path):
    """--serving-vllm-version 0.34.0 --platform cuda: vLLM's native suffix speculator (V2, always k drafts), its
    corpus key in each row, the factor and probability floor collapsed (0.34 ignores them); 0.33 stays arctic."""
    from nim_specdec_lab.suffix.gpu_speculator import GpuSuffixParams
    from nim_specdec_lab.suffix.simulator_gpu import simulate_suffix_gpu

    rows = {}
    for version in ("0.34.0", "0.33.0"):
        report = tmp_path / f"{version}.json"
        args = ["--records", str(records), "--method", "suffix", "--suffix-k", "2,4", "--suffix-factor", "1,2"]
        args += ["--suffix-cached", "10000", "--suffix-depth", "24", "--suffix-min-prob", "0.1"]
        proc = _cli(*args, "--serving-vllm-version", version, "--platform", "cuda", "--json", str(report))
        assert proc.returncode == 0, proc.stderr
        rows[version] = strict_json.loads(report.read_text())
    native = rows["0.34.0"]
    assert native["model_runner"] == {"suffix": "v2"} and native["vllm_version"] == "0.34.0"
    got = {r["num_speculative_tokens"]: r for r in native["grid"]}
    assert len(native["grid"]) == 2
    assert sorted(got) == [2, 4] and all(r["suffix_decoding_corpus_tokens"] == 1 << 20 for r in got.values())
    for k, r in got.items():
        expected = simulate_suffix_gpu(RECORDS, GpuSuffixParams(k), 4096)
        assert (r["drafts"], r["draft_tokens"], r["accepted_tokens"]) == (
            expected.drafts,
            expected.draft_tokens,
            expected.accepted,
        )
        assert r["draft_tokens"] == r["drafts"] * k
    assert rows["0.33.0"]["model_runner"] == {"suffix": "v1"}
    assert len(rows["0.33.0"]["grid"]) == 4  # arctic: k x factor


def test_vllm_version_refused_in_one_line(records):
    proc = _cli("--records", str(records), "--method", "suffix", "--serving-vllm-version", "latest")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "--serving-vllm-version" in proc.stderr
