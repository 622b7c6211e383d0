"""tune's answers from files, without a server: the decision again from recorded runs (`tune --decide`) and a
tune.json's runs in the form it reads (`tune --export-runs`). Each prints what it found; the decision's line
goes to stderr as tune's own does."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from nim_specdec.config.jsonvalue import loads
from nim_specdec.errors import ConfigError
from nim_specdec.files.regular_file import open_regular_text
from nim_specdec_lab.tune.deciding import recorded_runs as rec

MAX_RUNS_BYTES = 256 * 1024**2


def _read(path: str, flag: str) -> str:
    try:
        with open_regular_text(Path(path), MAX_RUNS_BYTES) as src:
            return src.read()
    except OSError as err:
        raise ConfigError(flag, f"cannot read {path} ({err.strerror})", "point it at a readable file") from None
    except UnicodeDecodeError:
        raise ConfigError(flag, f"{path} is not UTF-8 text", "point it at a JSON Lines file") from None


def decide_again(path: str, weights_text: str | None, margin: float, as_json: bool) -> int:
    """The decision on the runs recorded in `path`, weighted as `weights_text` says (else by off's
    concurrencies alike); its line on stderr, and with `as_json` the whole decision on stdout."""
    runs = rec.parse_runs(_read(path, "--decide").splitlines(), f"--decide {path}")
    weights = rec.parse_weights(weights_text, sorted({r.concurrency for r in runs if r.config == rec.OFF}))
    decision = rec.redecide(runs, weights, margin)
    note = rec.order_note(runs)
    if note:
        print(note, file=sys.stderr, flush=True)
    print(decision.line, file=sys.stderr, flush=True)
    if as_json:
        print(json.dumps(rec.decision_json(decision, weights, margin, runs), indent=2, allow_nan=False))
    return 0


def export_runs(path: str) -> int:
    """The runs of the tune.json at `path`, one JSON line each, in the form `decide_again` reads."""
    result = loads(_read(path, "--export-runs"), f"--export-runs {path}")
    if not isinstance(result, dict) or not isinstance(result.get("runs"), list):
        raise ConfigError("--export-runs", f"{path} holds no tune runs", "point it at the tune.json tune wrote")
    try:
        lines = rec.export_lines(result)
    except (KeyError, TypeError, AttributeError):
        raise ConfigError(
            "--export-runs", f"{path} has a run without its figures", "use tune's own tune.json"
        ) from None
    sys.stdout.write("".join(json.dumps(line, allow_nan=False) + "\n" for line in lines))
    return 0
