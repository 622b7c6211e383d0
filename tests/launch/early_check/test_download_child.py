"""The early check's download child: given the fetch context and log format made from the parsed settings on its
stdin (no command line, no second parse of the environment), it downloads, or reports its refusal as the
launcher's own error with the same exit code."""

from __future__ import annotations

import os

import pytest

from nim_specdec.config.settings import parse_settings
from nim_specdec.config.sources import parse_source
from nim_specdec.errors import EXIT_MATERIALIZE, MaterializeError
from nim_specdec.launch.early_check.while_downloading import _Download
from nim_specdec.launch.stage_inputs import fetch_context, log_format


def test_a_refusal_in_the_child_is_the_launchers_one_line_with_its_exit_code(tmp_path):
    settings = parse_settings({**os.environ, "NIM_CACHE_PATH": str(tmp_path / "cache")})
    missing = parse_source(str(tmp_path / "no-such-model"), "NIM_MODEL_PATH")
    child = _Download([missing], fetch_context(settings), log_format(settings))
    with pytest.raises(MaterializeError) as err:
        child.wait()
    assert err.value.exit_code == EXIT_MATERIALIZE
    assert err.value.problem.startswith(str(tmp_path / "no-such-model")) and "does not exist" in err.value.problem


def test_a_download_that_succeeds_ends_with_exit_0(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    settings = parse_settings({**os.environ, "NIM_CACHE_PATH": str(tmp_path / "cache")})
    child = _Download([parse_source(str(model), "NIM_MODEL_PATH")], fetch_context(settings), log_format(settings))
    child.wait()
    assert child.proc.returncode == 0
