"""`nim-specdec draft train` on bad input: one line on stderr naming the input and the fix, the documented exit
code, and nothing written where a server would read (no OUT/draft; an OUT that is not ours left as it was).

Each case stops before a server or the training stage is needed, so the table runs in seconds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nim_specdec_lab.demo_model import llama_config

SRC = Path(__file__).resolve().parents[3] / "src"
EXIT_CONFIG, EXIT_MATERIALIZE = 2, 3


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NIM_")}
    env["PYTHONPATH"] = str(SRC)
    return env


def chat(i: int) -> dict:
    return {"model": "demo", "messages": [{"role": "user", "content": f"tell me about item {i}"}], "max_tokens": 16}


def mooncake(n: int) -> str:
    return "".join(json.dumps({"timestamp": i * 10, "payload": chat(i)}) + "\n" for i in range(n))


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def model_dir(path: Path, config: dict) -> Path:
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps(config))
    return path


def good_target(tmp: Path) -> Path:
    return model_dir(tmp / "target", llama_config(2))


# (name, make(tmp) -> (argv after `draft train`), exit code, words the one line must hold)
CASES = [
    ("empty capture", lambda t: [str(write(t / "c.jsonl", "\n\n"))], EXIT_CONFIG, ["--capture", "empty"]),
    (
        "embeddings endpoint",
        lambda t: [str(write(t / "c.jsonl", json.dumps({"timestamp": 1, "payload": {"input": "x"}}) + "\n"))],
        EXIT_CONFIG,
        ["--capture", "neither", "capture chat or completion requests"],
    ),
    (
        "another format (an AIPerf trace)",
        lambda t: [str(write(t / "c.jsonl", json.dumps({"timestamp": 1, "input_length": 10, "hash_ids": [1]}) + "\n"))],
        EXIT_CONFIG,
        ["--capture", "line 1", "mooncake_payload or raw_payload"],
    ),
    ("not JSON", lambda t: [str(write(t / "c.jsonl", "a,b,c\n1,2,3\n"))], EXIT_CONFIG, ["--capture", "line 1"]),
    (
        "formats mixed",
        lambda t: [str(write(t / "c.jsonl", mooncake(25) + json.dumps(chat(99)) + "\n"))],
        EXIT_CONFIG,
        ["--capture", "line 26", "mooncake_payload"],
    ),
    (
        "below the minimum",
        lambda t: [str(write(t / "c.jsonl", mooncake(5)))],
        EXIT_CONFIG,
        ["--capture", "5 distinct requests", "minimum of 20", "--min-requests"],
    ),
    (
        "repeats do not count toward the minimum",
        lambda t: [str(write(t / "c.jsonl", mooncake(1) * 30))],
        EXIT_CONFIG,
        ["--capture", "1 distinct requests"],
    ),
    (
        "held-out fraction out of range",
        lambda t: [str(write(t / "c.jsonl", mooncake(30))), "--held-out", "1.5"],
        EXIT_CONFIG,
        ["--held-out", "1.5", "between 0 and 1"],
    ),
    (
        "out is a link",
        lambda t: [str(write(t / "c.jsonl", mooncake(30))), "--out-link"],
        EXIT_CONFIG,
        ["--out", "is a link"],
    ),
    (
        "out holds someone else's files",
        lambda t: [str(write(t / "c.jsonl", mooncake(30))), "--out-foreign"],
        EXIT_CONFIG,
        ["--out", "did not write", ".nim-specdec-draft"],
    ),
    (
        "out is a file",
        lambda t: [str(write(t / "c.jsonl", mooncake(30))), "--out-file"],
        EXIT_CONFIG,
        ["--out", "is not a directory"],
    ),
    (
        "a target no EAGLE3 head is trained for",
        lambda t: [str(write(t / "c.jsonl", mooncake(30))), "--target-bert"],
        EXIT_CONFIG,
        ["--target", "'bert' (BertModel)", "is not one an EAGLE3 head is trained for", "llama, mistral"],
    ),
    (
        "a target without a vocabulary",
        lambda t: [str(write(t / "c.jsonl", mooncake(30))), "--target-novocab"],
        EXIT_CONFIG,
        ["--target", "vocab_size"],
    ),
    (
        "a target directory without config.json",
        lambda t: [str(write(t / "c.jsonl", mooncake(30))), "--target-empty"],
        EXIT_MATERIALIZE,
        ["--target", "no config.json"],
    ),
    (
        "auxiliary layers the target lacks",
        lambda t: [str(write(t / "c.jsonl", mooncake(30))), "--aux-layers", "0,1,7"],
        EXIT_CONFIG,
        ["--aux-layers", "[0, 1, 7]", "1 to 2"],
    ),
]


def _argv(tmp: Path, made: list[str]) -> tuple[list[str], Path]:
    out = tmp / "out"
    target = good_target(tmp)
    argv = []
    for item in made:
        if item == "--out-link":
            (tmp / "elsewhere").mkdir()
            out.symlink_to(tmp / "elsewhere")
        elif item == "--out-foreign":
            out.mkdir()
            (out / "notes.txt").write_text("mine")
        elif item == "--out-file":
            out.write_text("a file")
        elif item == "--target-bert":
            target = model_dir(
                tmp / "bert",
                {"model_type": "bert", "architectures": ["BertModel"], "hidden_size": 64, "vocab_size": 10},
            )
        elif item == "--target-novocab":
            config = llama_config(2)
            del config["vocab_size"]
            target = model_dir(tmp / "novocab", config)
        elif item == "--target-empty":
            target = tmp / "empty"
            target.mkdir()
        else:
            argv.append(item)
    return [*argv, "--target", str(target), "--out", str(out), "--no-measure"], out


def _snapshot(path: Path) -> dict[str, bytes] | str:
    if path.is_symlink():
        return f"link to {os.readlink(path)}"
    if path.is_file():
        return path.read_bytes().decode()
    if not path.exists():
        return "absent"
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("name, make, code, words", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_with_its_exit_code(tmp_path, name, make, code, words):
    argv, out = _argv(tmp_path, make(tmp_path))
    before = _snapshot(out)
    proc = subprocess.run(
        [sys.executable, "-m", "nim_specdec", "draft", "train", *argv],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == code, proc.stderr
    assert len(lines) == 1 and lines[0].startswith("nim-specdec: error: "), proc.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert _snapshot(out) == before  # nothing written into OUT, nor created: every check ran before OUT was claimed
    assert not (tmp_path / "elsewhere" / "draft").exists()
