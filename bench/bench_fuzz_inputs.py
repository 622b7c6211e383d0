"""Property-based fuzz of every hostile input the launcher and the lab read; prints, per input, how many
cases ended in an internal error (exit 1, or an exception that is not the input's documented error).

Each input has a hypothesis strategy (hostile text, bytes, numbers, nesting, surrogates) and the function
that first reads it, called in this process. An expected refusal (the launcher's LauncherError, or the
documented ValueError of a pure parser) counts as handled; anything else is an internal error and its
first examples are printed. Secrets are checked too: a masked text that still holds the secret is a leak.

    PYTHONPATH=src python bench/bench_fuzz_inputs.py [--cases 10000] [--only NAME ...] [--show 3]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import json
import os
import struct
import sys
import tempfile
import time
import traceback
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz_bounds_inputs import bounds_inputs, launcher_error_only
from nim_specdec.capture.formats import FORMATS
from nim_specdec.cli.main import main
from nim_specdec.config.capture_config import parse_capture
from nim_specdec.config.jsonvalue import loads
from nim_specdec.config.sources import parse_source
from nim_specdec.config.specdec_args import parse_specdec_args
from nim_specdec.engines.protocol.serving import result_problem
from nim_specdec.engines.vllm.argv.user_args import parse_vllm_args
from nim_specdec.engines.vllm.observe.spec_counters import counters_problem, parse_prometheus, report
from nim_specdec.errors import LauncherError, printable
from nim_specdec.plan.method.builtin import entry_from_json
from nim_specdec.preflight.config_file import count_problem
from nim_specdec.preflight.safetensors_header import HeaderError, parse_header
from nim_specdec.text.linear_regex import PatternError, compile_linear, search_bounded
from nim_specdec.text.redact import MASK, preview, redact_argv, redact_text
from nim_specdec_lab.ngram.grid import make_grid, parse_int_set
from nim_specdec_lab.ngram.trace import parse_capture as parse_trace

PIECES = [
    "{",
    "}",
    "[",
    "]",
    '"',
    ":",
    ",",
    "\\",
    "\\u",
    "d800",
    "\\ud800",
    "NaN",
    "Infinity",
    "-",
    "1e999",
    "9" * 5000,
    "[" * 3000,
    "null",
    "true",
    "api_key",
    "speculative_config",
    "speculative-config",
    "method",
    "ngram",
    "eagle3",
    "num_speculative_tokens",
    "max_num_seqs",
    "--api-key",
    "-x",
    " ",
    "\t",
    "\n",
    "\x1b[2J",
    "\udcff",
    "é",
    "s3://",
    "hf://",
    "gs://",
    "/",
    "..",
    "@",
    "?",
    "#",
    "=",
    "'",
]
HOSTILE = st.one_of(st.text(max_size=200), st.lists(st.sampled_from(PIECES), max_size=40).map("".join))
JSONISH = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=30), st.sampled_from(PIECES)),
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(HOSTILE, inner, max_size=5)),
    max_leaves=20,
).map(lambda v: json.dumps(v, allow_nan=True))
TEXTS = st.one_of(HOSTILE, JSONISH)
BYTES = st.one_of(st.binary(max_size=300), TEXTS.map(lambda t: t.encode("utf-8", "surrogateescape")))
SECRET = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=12, max_size=40)


def _quiet(call):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return call()


def plan_with(env_extra: dict[str, str], args: list[str], workdir: Path) -> None:
    """`nim-specdec plan` in this process; only exit 0, 2 or 3 is an answer to bad input."""
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(workdir),
        "NIM_CACHE_PATH": str(workdir / "cache"),
        "NIM_MODEL_PATH": str(workdir / "target"),
        **env_extra,
    }
    saved = dict(os.environ)
    err = io.StringIO()
    try:
        os.environ.clear()
        os.environ.update(env)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code = main(["plan", *args])
    finally:
        os.environ.clear()
        os.environ.update(saved)
    if code not in (0, 2, 3) or "Traceback (most recent call last)" in err.getvalue():
        raise AssertionError(f"exit {code}: {err.getvalue().strip()[-300:]}")
    if code != 0 and len([ln for ln in err.getvalue().splitlines() if ln.startswith("nim-specdec: error")]) != 1:
        raise AssertionError(f"not one error line: {err.getvalue()[-300:]!r}")


def _redaction(secret: str, around: str) -> None:
    for text in (
        f"{around} {secret} {around}",
        printable(" ".join(f"x {secret} y".split())),
        json.dumps(secret),
        (around + secret)[:80] + "...",
    ):
        masked = redact_text(text, [secret])
        visible = secret if secret in text else ""
        if visible and visible in masked:
            raise AssertionError(f"leak: {secret!r} in {masked!r}")
    shown = redact_argv(["--api-key", secret.replace("-", "x"), "k2" + secret.replace("-", "x")])
    if MASK not in shown[1] or MASK not in shown[2]:
        raise AssertionError(f"leak in argv: {shown!r}")
    preview('{"api_key": "' + secret + '", ' + around)


def _counters(text: str) -> None:
    try:
        counters = parse_prometheus(text)
    except ValueError:
        return
    result = report(counters)
    if not (counters_problem(counters) or result_problem(result)):
        json.dumps(result, allow_nan=False)


def _pattern(pattern: str, path: str) -> None:
    try:
        search_bounded(compile_linear(pattern), path)
    except PatternError:
        pass


def _header(data: bytes) -> None:
    try:
        parse_header(data, "x")
    except HeaderError:
        pass


def _builtin(text: str) -> None:
    try:
        entry_from_json(loads(text, "built-in"), "x.json")
    except (LauncherError, TypeError):
        pass


def _model_config(text: str) -> None:
    try:
        value = loads(text, "config.json")
    except LauncherError:
        return
    if isinstance(value, dict):
        count_problem(value)


def _capture_body(data: bytes) -> None:
    for encode in FORMATS.values():
        try:
            json.loads(encode(1.0, data).split(b"\n")[0], parse_int=len)
        except ValueError:
            pass


def _grid(text: str) -> None:
    try:
        values = parse_int_set(text)
        make_grid(values, values, values)
    except ValueError:
        pass


def _trace(lines: list[str]) -> None:
    try:
        parse_trace(lines)
    except LauncherError:
        pass


def inputs(workdir: Path) -> dict[str, tuple]:
    tokens = st.lists(st.one_of(st.sampled_from(PIECES), HOSTILE), max_size=8)
    env_text = TEXTS.map(lambda t: t.replace("\x00", ""))  # no environment can carry a NUL
    return {
        "NIM_SPECDEC_ARGS (plan)": (
            env_text,
            lambda t: plan_with({"NIM_SPECDEC_ENABLE": "1", "NIM_SPECDEC_ARGS": t}, [], workdir),
        ),
        "NIM_PASSTHROUGH_ARGS (plan)": (env_text, lambda t: plan_with({"NIM_PASSTHROUGH_ARGS": t}, [], workdir)),
        "vLLM arguments (plan)": (
            tokens.map(lambda a: [t.replace("\x00", "") for t in a]),
            lambda a: plan_with({}, a, workdir),
        ),
        "NIM_DRAFT_MODEL_PATH (plan)": (
            env_text,
            lambda t: plan_with({"NIM_SPECDEC_ENABLE": "1", "NIM_DRAFT_MODEL_PATH": t}, [], workdir),
        ),
        "NIM_CAPTURE_ARGS": (
            TEXTS,
            launcher_error_only(lambda t: parse_capture({"NIM_CAPTURE_ENABLE": "1", "NIM_CAPTURE_ARGS": t})),
        ),
        "JSON values": (TEXTS, launcher_error_only(lambda t: loads(t, "x"))),
        "NIM_SPECDEC_ARGS (parser)": (TEXTS, launcher_error_only(parse_specdec_args)),
        "vLLM arguments (parser)": (tokens, launcher_error_only(lambda a: parse_vllm_args(a, "argument"))),
        "source URIs and paths": (HOSTILE, launcher_error_only(lambda t: parse_source(t, "NIM_MODEL_PATH"))),
        "endpoint_pattern + path": (st.tuples(HOSTILE, HOSTILE), lambda pair: _pattern(*pair)),
        "metrics body": (TEXTS, _counters),
        "safetensors header": (BYTES.map(lambda b: struct.pack("<Q", len(b)) + b), lambda d: _header(d[8:])),
        "model config.json": (TEXTS, _model_config),
        "built-in config": (TEXTS, _builtin),
        "capture request body": (BYTES, _capture_body),
        "n-gram grid": (HOSTILE, _grid),
        "trace lines": (st.lists(TEXTS, min_size=1, max_size=4), _trace),
        "secrets in output": (st.tuples(SECRET, HOSTILE), lambda pair: _redaction(*pair)),
        **bounds_inputs(workdir, TEXTS, HOSTILE, BYTES),
    }


def fuzz(name: str, strategy, target, cases: int, show: int) -> tuple[int, int, list[str]]:
    counts = collections.Counter()
    examples: list[str] = []

    @settings(
        max_examples=cases, database=None, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
    )
    @given(strategy)
    def run(value):
        counts["cases"] += 1
        try:
            _quiet(lambda: target(value))
        except Exception as err:  # noqa: BLE001 - what is counted
            counts["internal"] += 1
            if len(examples) < show:
                where = traceback.extract_tb(err.__traceback__)[-1]
                examples.append(
                    f"{type(err).__name__}: {str(err)[:200]} at {where.filename}:{where.lineno} "
                    f"for {str(value)[:120]!r}"
                )

    run()
    return counts["cases"], counts["internal"], examples


def main_() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10000, help="cases per input (default 10000)")
    parser.add_argument(
        "--plan-cases",
        type=int,
        default=None,
        help="cases for the inputs that run a whole plan (default: --cases; a plan costs ~25 ms)",
    )
    parser.add_argument("--only", nargs="*", default=None, help="inputs whose name contains one of these words")
    parser.add_argument("--show", type=int, default=3, help="internal errors to print per input")
    args = parser.parse_args()
    total_internal = 0
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        (workdir / "target").mkdir()
        (workdir / "target" / "config.json").write_text(
            json.dumps(
                {
                    "architectures": ["LlamaForCausalLM"],
                    "model_type": "llama",
                    "hidden_size": 64,
                    "vocab_size": 128,
                    "num_hidden_layers": 2,
                    "num_attention_heads": 4,
                    "num_key_value_heads": 2,
                    "intermediate_size": 128,
                    "max_position_embeddings": 256,
                }
            )
        )
        print(f"{'input':<30} {'cases':>7} {'internal errors':>16} {'seconds':>8}")
        for name, (strategy, target) in inputs(workdir).items():
            if args.only and not any(word.lower() in name.lower() for word in args.only):
                continue
            started = time.monotonic()
            count = args.plan_cases if args.plan_cases is not None and "(plan)" in name else args.cases
            cases, internal, examples = fuzz(name, strategy, target, count, args.show)
            total_internal += internal
            print(f"{name:<30} {cases:>7} {internal:>16} {time.monotonic() - started:>8.1f}", flush=True)
            for example in examples:
                print(f"    {printable(example)}")
    print(f"internal errors in all: {total_internal}")
    return 1 if total_internal else 0


if __name__ == "__main__":
    sys.exit(main_())
