"""The `docker run` examples of README.md and docs/*.md work as written: every one that reaches a gated
Hugging Face source passes HF_TOKEN into the container, and (docs/) every one that mounts the cache runs as
the folder's owner or has the folder given to UID 1000 first."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from gated_sources import gated_sources

REPO = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"```(?:bash|sh|console|shell)?\n(.*?)```", re.DOTALL)


def docker_runs(text: str) -> list[tuple[list[str], str]]:
    """(words, the whole code block) of each `docker run` command in the Markdown's code blocks."""
    found = []
    for block in FENCE.findall(text):
        joined = block.replace("\\\n", " ")
        for line in joined.splitlines():
            line = line.split(" #", 1)[0].strip()
            if "docker run" in line:
                words = shlex.split(line)
                found.append((words[words.index("run") - 1 :], block))
    return found


def _env_of(words: list[str]) -> dict[str, str | None]:
    """The -e/--env settings: NAME=value, or NAME alone (passed through from the caller's environment)."""
    env: dict[str, str | None] = {}
    for flag, value in zip(words, words[1:]):
        if flag in ("-e", "--env"):
            name, _, setting = value.partition("=")
            env[name] = setting if "=" in value else None
    return env


def _docs() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def test_the_example_reader_finds_what_it_must() -> None:
    sample = (
        "```bash\ndocker run --gpus all -e NIM_MODEL_NAME=meta/llama-3.1-8b-instruct \\\n"
        '  -v "$C:/opt/nim/.cache" $IMG\n```\n'
    )
    ((words, _),) = docker_runs(sample)
    assert words[:2] == ["docker", "run"] and _env_of(words) == {"NIM_MODEL_NAME": "meta/llama-3.1-8b-instruct"}
    # The built-in's target, at its pinned commit; the draft (yuhuili/...) is not gated.
    (gated,) = gated_sources("meta/llama-3.1-8b-instruct", words)
    assert gated.startswith("hf://meta-llama/Llama-3.1-8B-Instruct@")


@pytest.mark.parametrize("path", _docs(), ids=lambda p: p.name)
def test_gated_examples_pass_hf_token(path: Path) -> None:
    for words, _ in docker_runs(path.read_text()):
        env = _env_of(words)
        # README: the literal hf:// sources; docs/: built-in model names too (their sources are gated).
        model_name = env.get("NIM_MODEL_NAME") if path.parent.name == "docs" else None
        gated = gated_sources(model_name, words)
        if gated:
            assert "HF_TOKEN" in env and env["HF_TOKEN"] is None, (
                f"{path.name}: {' '.join(words)[:100]} needs -e HF_TOKEN"
            )


def test_deploy_doc_has_the_examples_and_prepares_the_cache_for_uid_1000() -> None:
    text = (REPO / "docs" / "deploy.md").read_text()
    runs = docker_runs(text)
    assert len(runs) >= 3
    mounting = [(words, block) for words, block in runs if any(w.endswith(":/opt/nim/.cache") for w in words)]
    assert len(mounting) >= 2
    for words, block in mounting:
        assert "--user" in words or "chown -R 1000" in block, " ".join(words)[:100]
    chapters = ("## Docker", "## Kubernetes", "## LeaderWorkerSet", "## Monitoring", "## GPU smoke test", "## Checks")
    for chapter in chapters:
        assert chapter in text
    assert "R580" in text


DRAIN_DEFAULT = 60  # NIM_SHUTDOWN_TIMEOUT's default: what vLLM drains on SIGTERM before its engine exits


@pytest.mark.parametrize("path", _docs(), ids=lambda p: p.name)
def test_serving_examples_outlast_the_drain_when_stopped(path: Path) -> None:
    """A served example (a published port) outlives the drain on `docker stop`: docker's 10 s would cut it."""
    serving = [words for words, _ in docker_runs(path.read_text()) if "-p" in words]
    for words in serving:
        assert "--stop-timeout" in words, f"{path.name}: {' '.join(words)[:100]} needs --stop-timeout"
        assert int(words[words.index("--stop-timeout") + 1]) > DRAIN_DEFAULT, " ".join(words)[:100]
    for line in path.read_text().splitlines():
        if "docker stop " in line and "-t " in line:
            assert int(line.split("-t ", 1)[1].split()[0]) > DRAIN_DEFAULT, line


def test_the_readme_serves_and_stops_its_docker_example() -> None:
    runs = [words for words, _ in docker_runs((REPO / "README.md").read_text()) if "-p" in words]
    assert runs and all("--stop-timeout" in words for words in runs)
    assert "docker stop nim" in (REPO / "README.md").read_text()
