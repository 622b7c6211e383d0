"""Files read from a model, draft, built-in or cache folder are files their owner placed there: a link out of
the folder (to a token file, a service-account key, /proc/self/environ) is refused by name, and no error about
a file's content quotes the content. One module (files/regular_file.py: open_inside, read_json_inside) reads
them all; a guard below keeps every other reader of files in the sources named and explained."""

from __future__ import annotations

import json
import os
import re
import struct
from pathlib import Path

import pytest

from fuzz_plan_cases import EAGLE3, LLAMA
from nim_specdec.cli.main import main
from nim_specdec.errors import MaterializeError

SECRET = "hf_SeCrEtToKeN0123456789abcdefXYZ"
SRC = Path(__file__).resolve().parents[2] / "src"


def _safetensors(header: dict) -> bytes:
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw


WEIGHTS = _safetensors({"w": {"dtype": "F16", "shape": [1], "data_offsets": [0, 2]}}) + b"\0\0"


def _plan(tmp_path: Path, monkeypatch, capsys, env: dict[str, str] | None = None) -> tuple[int, str]:
    for key in [k for k in os.environ if k.startswith("NIM_")]:
        monkeypatch.delenv(key)
    settings = {
        "NIM_SPECDEC_ENABLE": "1",
        "NIM_MODEL_PATH": str(tmp_path / "target"),
        "NIM_DRAFT_MODEL_PATH": str(tmp_path / "draft"),
        "NIM_CACHE_PATH": str(tmp_path / "cache"),
        "NIM_SPECDEC_ARGS": json.dumps({"speculative_config": {"method": "eagle3", "num_speculative_tokens": 3}}),
        **(env or {}),
    }
    for key, value in settings.items():
        monkeypatch.setenv(key, value)
    code = main(["plan"])
    out = capsys.readouterr()
    return code, out.out + out.err


def _models(tmp_path: Path) -> None:
    for name, config in (("target", LLAMA), ("draft", EAGLE3)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(config))


def _secret(tmp_path: Path, text: str = SECRET + "\n") -> Path:
    path = tmp_path / "elsewhere" / "token"
    path.parent.mkdir()
    path.write_text(text)
    return path


def _link(path: Path, target: Path) -> None:
    if path.exists():
        path.unlink()
    path.symlink_to(target)


PLANTED = {
    "target config.json": ("target/config.json", 3),
    "draft config.json": ("draft/config.json", 3),
    "sharded index": ("target/model.safetensors.index.json", 3),
    "draft weights": ("draft/model.safetensors", 3),
}


@pytest.mark.parametrize("where", PLANTED)
@pytest.mark.parametrize("secret", ["text", "json"])
def test_a_link_out_of_a_model_folder_is_refused_and_the_secret_never_printed(
    tmp_path, monkeypatch, capsys, where, secret
):
    _models(tmp_path)
    (tmp_path / "draft" / "model.safetensors").write_bytes(WEIGHTS)
    # A secret that parses as JSON too: a service-account key, or a config whose counts are the secret.
    body = SECRET + "\n" if secret == "text" else json.dumps({"hidden_size": SECRET, "weight_map": {"w": SECRET}})
    name, code = PLANTED[where]
    _link(tmp_path / name, _secret(tmp_path, body))
    got, printed = _plan(tmp_path, monkeypatch, capsys)
    assert got == code and len(printed.strip().splitlines()) == 1, printed
    assert "a link to a file outside its folder" in printed and Path(name).name in printed, printed
    assert SECRET not in printed and SECRET[:8] not in printed, printed


def test_a_builtin_config_linked_to_a_secret_is_refused_without_printing_it(tmp_path, monkeypatch, capsys):
    _models(tmp_path)
    builtin = tmp_path / "builtin"
    builtin.mkdir()
    _link(builtin / "x.json", _secret(tmp_path))
    got, printed = _plan(tmp_path, monkeypatch, capsys, {"NIM_BUILTIN_CONFIG_DIR": str(builtin)})
    assert got == 2 and len(printed.strip().splitlines()) == 1, printed
    assert "x.json" in printed and "outside its folder" in printed and SECRET[:8] not in printed, printed


@pytest.mark.parametrize(
    "content,fragment",
    [
        (SECRET, "invalid JSON at line 1 column 1"),
        ('{"hidden_size": "' + SECRET + '"}', "hidden_size is not a whole number"),
        ('{"rope_scaling": {"factor": "' + SECRET + '"}}', "rope_scaling.factor is not a positive number"),
        ('{"a": 1, "a": "' + SECRET + '"}', "key is given twice"),
        ('{"' + SECRET + '": 1, "' + SECRET + '": 2}', "key is given twice"),
        ('{"n": ' + "7" * 80 + SECRET[:0] + "}", "integer is too large"),
    ],
)
def test_an_error_about_a_files_content_never_quotes_it(tmp_path, monkeypatch, capsys, content, fragment):
    _models(tmp_path)
    (tmp_path / "target" / "config.json").write_text(content)
    got, printed = _plan(tmp_path, monkeypatch, capsys)
    assert got == 3 and len(printed.strip().splitlines()) == 1 and fragment in printed, printed
    assert SECRET[:8] not in printed and "7777777" not in printed, printed


def test_links_inside_the_folder_and_a_hub_snapshot_are_read(tmp_path, monkeypatch, capsys):
    """A model folder may hold links to its own files; a Hub cache snapshot's files are links into its blobs."""
    _models(tmp_path)
    real = tmp_path / "target" / "real"
    real.mkdir()
    (real / "config.json").write_text(json.dumps(LLAMA))
    _link(tmp_path / "target" / "config.json", Path("real/config.json"))
    repo = tmp_path / "models--org--draft"
    (repo / "blobs").mkdir(parents=True)
    (repo / "snapshots" / "abc").mkdir(parents=True)
    (repo / "blobs" / "0123").write_text(json.dumps(EAGLE3))
    (repo / "snapshots" / "abc" / "config.json").symlink_to("../../blobs/0123")
    got, printed = _plan(tmp_path, monkeypatch, capsys, {"NIM_DRAFT_MODEL_PATH": str(repo / "snapshots" / "abc")})
    assert got == 0, printed


def test_open_inside_checks_the_opened_file_and_reports_without_content(tmp_path):
    from nim_specdec.files.regular_file import read_inside, read_json_inside  # noqa: PLC0415

    folder = tmp_path / "m"
    folder.mkdir()
    _link(folder / "c.json", _secret(tmp_path))
    with pytest.raises(OSError, match="outside its folder"):
        read_inside(folder / "c.json", folder, 1024)
    (folder / "d.json").write_text(SECRET)
    with pytest.raises(MaterializeError) as err:
        read_json_inside(folder / "d.json", folder, 1024, MaterializeError, "draft model")
    assert str(folder / "d.json") in err.value.one_line() and SECRET[:8] not in err.value.one_line()


# Every other place in the sources that opens or reads a file by path, and why it is not a file from a model,
# draft, built-in or cache folder (those go through files/regular_file.py's open_inside and read_json_inside).
# A new reader fails this test until it is named here or reads through open_inside.
OTHER_READERS = {
    "nim_specdec/capture/file.py": "the capture file the launcher writes, opened O_NOFOLLOW",
    "nim_specdec/cli/cmd_report.py": "report inputs the user names (read_regular, capped)",
    "nim_specdec/cli/main.py": "/dev/null for stdout after a broken pipe",
    "nim_specdec/fetchers/volume/cache.py": "the cache's own folder descriptors (fsync)",
    "nim_specdec/fetchers/integrity/digests.py": "downloaded files, never followed as links (follow=False)",
    "nim_specdec/fetchers/buckets/gcs.py": "a download written into the launcher's temporary folder",
    "nim_specdec/fetchers/integrity/write_follower.py": "files a client writes in the launcher's download, O_NOFOLLOW",
    "nim_specdec/fetchers/buckets/s5cmd.py": "s5cmd's report and error files in the launcher's temporary folder",
    "nim_specdec/files/trust.py": "the cache's trust rules: O_NOFOLLOW descriptors and /proc/self/mountinfo",
    "nim_specdec/files/volume.py": "/proc/self/mountinfo, the kernel's view of the cache volume's mount",
    "nim_specdec/launch/compile_cache/claim.py": "the compile cache's lock and index, never followed as links",
    "nim_specdec/launch/compile_cache/prune.py": "directory descriptors of the compile cache, O_NOFOLLOW",
    "nim_specdec/engines/vllm/release/vllm_schema.py": "schemas shipped inside the package",
    "nim_specdec/engines/sglang/options.py": "SGLang option snapshots shipped inside the package",
    "nim_specdec/preflight/device.py": "/proc/cpuinfo",
    "nim_specdec/preflight/driver.py": "torch's version.py in the installed package",
    "nim_specdec_lab/cli/cmd_alert_rules.py": "a tune.json the user names (read_regular, capped)",
    "nim_specdec_lab/cli/cmd_bench.py": "report.md the lab has just written",
    "nim_specdec_lab/cli/support/bench_io.py": "a prompts file the user names (read_regular, capped)",
    "nim_specdec_lab/cli/support/bench_serve_flow.py": "an env file the user names (read_regular, capped)",
    "nim_specdec_lab/tune/deciding/from_recorded.py": "recorded runs the user names (open_regular_text, capped)",
    "nim_specdec_lab/simulation/inputs.py": "a trace the user names (open_regular_text, capped)",
    "nim_specdec_lab/draft/flow.py": "a capture the user names (open_regular_text, capped)",
    "nim_specdec_lab/draft/training/supervisor.py": "the training rows and the worker's log, written by the run itself",
    "nim_specdec_lab/draft/training/worker.py": "its job, rows, checkpoints and staged export, written by the run",
    "nim_specdec_lab/ngram/http_replay.py": "records the user names (open_regular_text, capped)",
    "nim_specdec_lab/replay/aiperf_run.py": "AIPerf's log, which the lab writes",
    "nim_specdec_lab/server_process.py": "the server's log, which the lab writes, and /proc/PID/cmdline",
    "nim_specdec_lab/tune/engines/device.py": "/proc/cpuinfo",
    "nim_specdec_lab/tune/servers.py": "a trace the user names (open_regular_text, capped)",
}
_READS = re.compile(
    r"(?<![\w.])open\(|\.read_text\(|\.read_bytes\(|json\.load\(|os\.open\(|read_regular\(|open_regular(?:_text|_fd)?\("
)


def test_every_reader_of_files_reads_inside_its_folder_or_is_named_with_its_reason():
    found = set()
    for path in sorted(SRC.rglob("*.py")):
        name = str(path.relative_to(SRC))
        if name == "nim_specdec/files/regular_file.py":  # the readers themselves
            continue
        code = "\n".join(line.split("#", 1)[0] for line in path.read_text(encoding="utf-8").splitlines())
        if _READS.search(code):
            found.add(name)
    assert found - set(OTHER_READERS) == set(), "read through files/regular_file.py's open_inside, or name it"
    assert set(OTHER_READERS) - found == set(), "no longer reads a file: remove it from OTHER_READERS"


def test_the_model_and_builtin_readers_read_inside_their_folder():
    for name in (
        "nim_specdec/preflight/config_file.py",
        "nim_specdec/preflight/safetensors_header.py",
        "nim_specdec/preflight/pickled_weights.py",
        "nim_specdec/plan/method/builtin.py",
        "nim_specdec_lab/replay/measure.py",
        "nim_specdec_lab/demo_model.py",
    ):
        assert re.search(r"\b(open_inside|read_inside|read_json_inside)\(", (SRC / name).read_text()), name
