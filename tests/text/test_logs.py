"""Log lines: plain or JSON Lines, never carrying a secret value."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

from nim_specdec.text.logs import setup_logging
from nim_specdec.text.redact import secret_values


def _plan(env_extra: dict, models) -> subprocess.CompletedProcess:
    env = {**os.environ, "NIM_CACHE_PATH": str(models["cache"]), "NIM_MODEL_PATH": str(models["target"]), **env_extra}
    return subprocess.run(
        [sys.executable, "-m", "nim_specdec", "plan"], env=env, capture_output=True, text=True, timeout=60
    )


def test_jsonl_logging_writes_one_object_per_line(models):
    proc = _plan({"NIM_JSONL_LOGGING": "1", "NIM_SPECDEC_ARGS": '{"max_num_seqs": 4}'}, models)
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in proc.stderr.splitlines()]
    assert [r["level"] for r in records] == ["WARNING"]
    assert "NIM_SPECDEC_ARGS is ignored" in records[0]["message"]
    json.loads(proc.stdout)  # stdout stays pure JSON


def test_log_level_filters_warnings(models):
    proc = _plan({"NIM_LOG_LEVEL": "error", "NIM_SPECDEC_ARGS": '{"max_num_seqs": 4}'}, models)
    assert proc.returncode == 0 and proc.stderr == ""


def test_secret_values_are_masked_in_log_lines(capsys):
    logging.disable(logging.NOTSET)  # another test of this worker may have muted logging (vLLM's check does, briefly)
    log = setup_logging("INFO", False, secret_values({"HF_TOKEN": "hf_verysecret", "NIM_X": "plain"}))
    log.info("token is %s, value %s", "hf_verysecret", "plain")
    err = capsys.readouterr().err
    assert "hf_verysecret" not in err and "token is ***, value plain" in err


def test_with_jsonl_a_library_warning_or_log_line_at_import_is_json_too(tmp_path):
    """A module imported after logging is set up warns and logs, as SDKs do at import: every stderr line is JSON."""
    (tmp_path / "noisy_library.py").write_text(
        "import logging, warnings\n"
        "warnings.warn('deprecated thing', UserWarning)\n"
        "logging.getLogger('noisy_library').warning('library says hello')\n"
    )
    code = (
        "import importlib, logging\n"
        "from nim_specdec.text.logs import setup_logging\n"
        "setup_logging('INFO', True, [])\n"
        "importlib.import_module('noisy_library')\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    lines = proc.stderr.splitlines()
    assert proc.returncode == 0 and len(lines) == 2, proc.stderr
    records = [json.loads(line) for line in lines]
    assert any("deprecated thing" in r["message"] for r in records)
    assert any(r["message"] == "library says hello" and r["logger"] == "noisy_library" for r in records)
