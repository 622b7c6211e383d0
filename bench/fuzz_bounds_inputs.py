"""The inputs of the third hostile-input round, for bench/bench_fuzz_inputs.py: secrets that start with '-',
the endpoints' view of the server's command line, NIM_TUNED_FOR, simulate's records and --current, cache
markers, whole safetensors files and indexes (numbers against the file's size), file:// URIs, object
names a file system cannot hold, and Prometheus text as `report` reads it.

Each entry is (hypothesis strategy, target); a target raises only for an internal error or a leak.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

from hypothesis import strategies as st

from nim_specdec.cli.cmd_report import _parse_prometheus
from nim_specdec.config.sources import parse_source
from nim_specdec.config.tuned_for import parse_tuned_for
from nim_specdec.engines.vllm.argv.user_args import parse_vllm_args
from nim_specdec.errors import LauncherError
from nim_specdec.fetchers.transfer.progress import human_bytes
from nim_specdec.fetchers.transfer.safety import check_clashes, target_path
from nim_specdec.fetchers.volume import cache
from nim_specdec.preflight.config_file import index_shards
from nim_specdec.preflight.safetensors_header import HeaderError, read_header
from nim_specdec.server.spec_info import shown_speculative_config
from nim_specdec.text.redact import redact_argv
from nim_specdec_lab.ngram.http_replay import load_records
from nim_specdec_lab.simulation.inputs import current_setting

# What secrets.token_urlsafe() draws: one key in 64 starts with '-'.
URLSAFE = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", min_size=12, max_size=43)


def _dash_secret(secret: str, rest: list[str]) -> None:
    key = "-" + secret
    rest = [r for r in rest if secret not in r]  # the secret given again as another argument is not a leak
    for argv in (["--api-key", key, *rest], ["--hf-token", key, *rest], ["--api-key", "K" * 12, key, *rest]):
        shown = " ".join(redact_argv(argv))
        if secret in shown:
            raise AssertionError(f"leak in argv: {shown!r}")
        try:
            parsed = parse_vllm_args(argv, "argument")
        except LauncherError as err:
            if secret in err.one_line():
                raise AssertionError(f"leak in an error line: {err.one_line()!r}") from None
            continue
        names = " ".join(o.name for o in parsed.options)
        if secret[:8] in names:
            raise AssertionError(f"a key became an option name: {names!r}")


def _endpoint(config_text: str, secret: str) -> None:
    spec = json.dumps({"method": "ngram", "loader": {"secret_key": secret}, "x": config_text})
    shown = json.dumps(shown_speculative_config(["api_server", "--speculative-config", spec], {}))
    if secret in shown and secret not in config_text:  # the same text given as a plain field is no leak
        raise AssertionError(f"leak at the endpoint: {shown[:200]!r}")
    shown_speculative_config(["api_server", "--speculative-config", config_text], {})


def _in_file(workdir: Path, name: str, data: bytes) -> Path:
    path = workdir / name
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    return path


def _records(workdir: Path, data: bytes) -> None:
    try:
        load_records(str(_in_file(workdir, "records.jsonl", data)))
    except LauncherError:
        pass


def _marker(workdir: Path, data: bytes) -> None:
    found = cache.read_marker(_in_file(workdir, "marker.json", data))
    if found is not None:
        human_bytes(found["size"])


def _safetensors(workdir: Path, header: bytes, tail: bytes) -> None:
    try:
        read_header(_in_file(workdir, "model.safetensors", struct.pack("<Q", len(header)) + header + tail))
    except HeaderError:
        pass


def _index(workdir: Path, data: bytes) -> None:
    folder = workdir / "indexed"
    folder.mkdir(exist_ok=True)
    _in_file(folder, "model.safetensors.index.json", data)
    try:
        index_shards(folder, "target model")
    except (HeaderError, LauncherError):
        pass


def _names(workdir: Path, names: list[str]) -> None:
    try:
        for name in names:
            target_path("s3://b/m", workdir, name)
        check_clashes("s3://b/m", names)
    except LauncherError:
        pass


def _current(text: str) -> None:
    try:
        current_setting(text)
    except LauncherError:
        pass


def launcher_error_only(call):
    def run(*values):
        try:
            call(*values)
        except LauncherError:
            pass

    return run


def bounds_inputs(workdir: Path, texts, hostile, binary) -> dict[str, tuple]:
    numbers = st.one_of(st.integers(), st.floats(), st.booleans(), st.none(), st.just(10**400), st.text(max_size=5))
    tensor = st.fixed_dictionaries(
        {
            "dtype": st.sampled_from(["BF16", "F32", 1]),
            "shape": st.lists(numbers, max_size=3),
            "data_offsets": st.lists(numbers, max_size=3),
        }
    )
    header = st.one_of(binary, st.dictionaries(hostile, tensor, max_size=3).map(lambda d: json.dumps(d).encode()))
    marker = st.fixed_dictionaries(
        {
            "complete": st.one_of(st.just(True), numbers),
            "uri": st.one_of(st.just("s3://b/m"), numbers),
            "files": st.lists(st.fixed_dictionaries({"path": st.just("a"), "size": numbers}), max_size=3),
            "size": numbers,
            "completed_at": st.just("2026-01-01T00:00:00Z"),
        }
    ).map(lambda d: json.dumps(d).encode())
    index = st.fixed_dictionaries(
        {
            "metadata": st.fixed_dictionaries({"total_size": numbers}),
            "weight_map": st.dictionaries(hostile, st.one_of(hostile, numbers), max_size=3),
        }
    ).map(lambda d: json.dumps(d).encode())
    row = st.fixed_dictionaries(
        {
            "prompt_token_ids": st.lists(numbers, max_size=3),
            "output_token_ids": st.lists(numbers, max_size=3),
            "max_model_len": numbers,
        }
    ).map(lambda d: json.dumps(d).encode())
    name = st.one_of(hostile, st.text(alphabet="ab/", max_size=20), st.just("n" * 300))
    return {
        "secret starting with '-'": (st.tuples(URLSAFE, st.lists(hostile, max_size=3)), lambda p: _dash_secret(*p)),
        "endpoint config": (st.tuples(texts, URLSAFE), lambda p: _endpoint(*p)),
        "NIM_TUNED_FOR": (texts, launcher_error_only(parse_tuned_for)),
        "simulate records": (
            st.one_of(binary, row, st.lists(row, max_size=3).map(b"\n".join)),
            lambda d: _records(workdir, d),
        ),
        "simulate --current": (texts.filter(bool), _current),
        "cache marker": (st.one_of(binary, marker), lambda d: _marker(workdir, d)),
        "safetensors file": (st.tuples(header, st.binary(max_size=64)), lambda p: _safetensors(workdir, *p)),
        "safetensors index": (st.one_of(binary, index), lambda d: _index(workdir, d)),
        "file URIs": (hostile, launcher_error_only(lambda t: parse_source("file:" + t, "NIM_MODEL_PATH"))),
        "object names": (st.lists(name, min_size=1, max_size=4), lambda n: _names(workdir, n)),
        "Prometheus text (report)": (texts, launcher_error_only(lambda t: _parse_prometheus(t, "--since"))),
    }
