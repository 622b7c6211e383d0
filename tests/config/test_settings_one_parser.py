"""Every command reads NIM_* variables through config.settings: the same value is accepted or refused
the same way by `plan`, `download` and `cache ls`, with exit 2 and one line naming the variable."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from nim_specdec.config.settings import DEFAULT_CACHE_PATH, parse_settings
from nim_specdec.errors import ConfigError

COMMANDS = {
    "plan": ["plan"],
    "download": ["download", "/nonexistent-model-dir"],
    "cache ls": ["cache", "ls"],
}
BAD = [
    ({"NIM_CACHE_PATH": "relative/cache"}, "NIM_CACHE_PATH: relative path 'relative/cache' is not allowed"),
    ({"NIM_DISABLE_MODEL_DOWNLOAD": "maybe"}, "NIM_DISABLE_MODEL_DOWNLOAD: invalid value 'maybe'"),
    ({"NIM_S3_ANONYMOUS": "yes please"}, "NIM_S3_ANONYMOUS: invalid value 'yes please'"),
    ({"NIM_DOWNLOAD_TIMEOUT": "soon"}, "NIM_DOWNLOAD_TIMEOUT"),
    ({"NIM_LOG_LEVEL": "LOUD"}, "NIM_LOG_LEVEL: invalid value 'LOUD'"),
]


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("bad, words", BAD, ids=[next(iter(b)) for b, _ in BAD])
def test_every_command_refuses_the_same_values(command, bad, words, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("NIM_")}
    env.update(NIM_MODEL_PATH=str(tmp_path), **bad)
    if "NIM_CACHE_PATH" not in bad:
        env["NIM_CACHE_PATH"] = str(tmp_path / "cache")
    done = subprocess.run(
        [sys.executable, "-m", "nim_specdec", *COMMANDS[command]], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2, (done.returncode, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0] and "Traceback" not in done.stderr


def test_defaults_exist_once():
    settings = parse_settings({})
    assert (
        settings.locations.cache_path == DEFAULT_CACHE_PATH
        and settings.locations.workspace == DEFAULT_CACHE_PATH + "/workspace"
    )
    assert settings.download.retries == 3 and settings.download.s5cmd == "auto"


SWITCHES = {
    "NIM_S3_ANONYMOUS": lambda s: s.download.s3_anonymous,
    "NIM_JSONL_LOGGING": lambda s: s.jsonl_logging,
    "NIM_SPECDEC_ENABLE": lambda s: s.speculation.enable,
    "NIM_DISABLE_MODEL_DOWNLOAD": lambda s: s.disable_download,
}


@pytest.mark.parametrize("name", sorted(SWITCHES))
def test_one_boolean_rule(name):
    read = SWITCHES[name]
    assert read(parse_settings({name: " ON "})) is True and read(parse_settings({name: "no"})) is False
    with pytest.raises(ConfigError) as err:
        parse_settings({name: "2"})
    assert err.value.where == name
