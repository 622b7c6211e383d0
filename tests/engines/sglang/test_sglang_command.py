"""The SGLang command, and whether SGLang can be served here (the refusal where it cannot)."""

from __future__ import annotations

import pytest

from nim_specdec.engines.sglang.command import launch_command, server_arguments
from nim_specdec.engines.sglang.installed import installed_release, serve_python
from nim_specdec.errors import EXIT_CONFIG, ConfigError


def test_the_command_holds_model_address_name_flags_then_the_rest():
    command = launch_command(
        "/usr/bin/python3",
        "/ws/target",
        "0.0.0.0",
        8000,
        "meta/llama",
        ("--speculative-algorithm", "NGRAM"),
        ("--tp", "2"),
    )
    assert command == (
        "/usr/bin/python3", "-m", "sglang.launch_server", "--model-path", "/ws/target", "--host", "0.0.0.0",
        "--port", "8000", "--served-model-name", "meta/llama", "--speculative-algorithm", "NGRAM", "--tp", "2",
    )  # fmt: skip
    assert server_arguments(command) == command[3:]


def test_no_served_name_leaves_sglangs_own():
    command = launch_command("python", "/m", "::", 9, None, (), ())
    assert "--served-model-name" not in command


@pytest.mark.parametrize("release", ["0.5.23", "0.5.9", "0.5.23.post1", "0.5.24+cu130"])
def test_a_05_release_is_served_with_this_interpreter(release):
    assert serve_python("/opt/venv/bin/python", release) == "/opt/venv/bin/python"


@pytest.mark.parametrize(
    ("release", "fragment"),
    [
        (None, "NIM_ENGINE: sglang is selected but SGLang is not installed beside /opt/venv/bin/python"),
        ("0.4.10", "NIM_ENGINE: sglang is selected but the installed SGLang is '0.4.10'"),
        ("0.6.0", "NIM_ENGINE: sglang is selected but the installed SGLang is '0.6.0'"),
    ],
)
def test_serving_sglang_where_it_is_not_is_refused_in_one_line(release, fragment):
    with pytest.raises(ConfigError) as caught:
        serve_python("/opt/venv/bin/python", release)
    assert str(caught.value).startswith(fragment) and "or set NIM_ENGINE=vllm" in str(caught.value)
    assert caught.value.exit_code == EXIT_CONFIG


def test_the_launchers_interpreter_has_no_sglang():
    # The project's venv holds vLLM, not SGLang: the shell's one look says so without importing anything.
    assert installed_release() is None
