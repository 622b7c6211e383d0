"""vLLM as the judge: the final command line through the installed vLLM's own parser and config classes.

The calls are the ones vLLM makes at start (serve argument parser, validate_parsed_serve_args,
create_engine_config, the scheduler's batch-size schedule check), so a configuration that passes here
does not die in vLLM later for a configuration reason. Importing vLLM costs seconds: `serve` and
`prepare` run this while the weights download, `plan` only with --check-vllm.

Only config.json (and the tokenizer files if present) of the target and draft are read, so the check
runs against small directories that stand in for the workspace paths the command line names.

A process that sees no device (an init container that only pre-fetches, with the CUDA build) gets vLLM's
unspecified platform, on which every engine config fails: that is no verdict on the configuration, so
the outcome is "not checked" (Note.checked False) and the server's start checks again.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import itertools
import logging
import os
import re
import sys
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from nim_specdec.engines.vllm.check.request import CheckRequest, local_paths, serve_args, substitute_paths, unavailable
from nim_specdec.engines.vllm.release.vllm_schema import knowledge_for, known_versions
from nim_specdec.errors import ConfigError
from nim_specdec.text.redact import MASK, is_secret_name, redact_text

_MISSING_PACKAGE = re.compile(r"Failed to import|No module named")


@dataclass(frozen=True)
class Verdict:
    ok: bool
    reason: str = ""  # vLLM's own words, one line
    stage: str = ""  # "parser", "speculative", "engine" or "scheduler"
    keys: tuple[str, ...] = ()  # argument or speculative_config keys vLLM's error names
    spec: tuple[tuple[str, Any], ...] | None = None  # what vLLM resolved: method, model, num_speculative_tokens


UNCHECKED = "unchecked"  # Verdict.stage when vLLM cannot judge in this process (no device)


@dataclass(frozen=True)
class Note:
    """What check_plan says when vLLM did not refuse: a remark, or why it could not judge here."""

    text: str
    checked: bool = True  # False: not checked in this process; the server's start checks again


class _ParserError(Exception):
    pass


def _secrets(args: Sequence[str], known: Sequence[str]) -> list[str]:
    """`known`: the secret variables' values (config.host_env), with the command line's own."""
    values = list(known)
    for i, token in enumerate(args):
        name, _, inline = token.partition("=")
        if token.startswith("--") and is_secret_name(name):
            # --api-key takes a list: every value up to the next option is a secret.
            given = [inline] if inline else list(itertools.takewhile(lambda t: not t.startswith("--"), args[i + 1 :]))
            values += [value for value in given if len(value) >= 4]
    return sorted(set(values), key=len, reverse=True)


def _pydantic_reason(err: Exception) -> tuple[str, tuple[str, ...]] | None:
    errors = getattr(err, "errors", None)
    if not callable(errors) or type(err).__name__ != "ValidationError":
        return None
    parts, keys = [], []
    for item in errors(include_url=False, include_input=False):
        loc = ".".join(str(p) for p in item.get("loc", ()))
        keys += [str(p) for p in item.get("loc", ()) if isinstance(p, str)]
        msg = str(item.get("msg", "")).removeprefix("Value error, ")
        parts.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(parts), tuple(keys)


def _stage(err: BaseException) -> str:
    tb = err.__traceback__
    stage = "engine"
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename.replace(os.sep, "/")
        if name.endswith("config/speculative.py") or tb.tb_frame.f_code.co_name == "create_speculative_config":
            stage = "speculative"
        tb = tb.tb_next
    return stage


def cli_args_module():
    """vLLM's serve-argument module (make_arg_parser, validate_parsed_serve_args), wherever the running
    release keeps it: each known release's place, newest first (0.33 moved it to entrypoints/common)."""
    places = dict.fromkeys(knowledge_for(v).data["cli_args_module"] for v in reversed(known_versions()))
    for name in places:
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError as err:
            if err.name is None or not name.startswith(err.name):
                raise  # a module it imports is missing: not a question of where the parser lives
    raise ImportError(f"vLLM's serve argument parser is in none of {', '.join(places)}")


def _make_parser():
    from vllm.utils.argparse_utils import FlexibleArgumentParser  # noqa: PLC0415 - imports vLLM: seconds

    make_arg_parser = cli_args_module().make_arg_parser

    class Parser(FlexibleArgumentParser):
        def error(self, message: str):  # argparse would print usage and exit
            raise _ParserError(message)

    return make_arg_parser(Parser(description="vLLM OpenAI-Compatible RESTful API server."))


def judge(args: Sequence[str]) -> Verdict:
    """vLLM's verdict on serve arguments (without the program and module). Imports vLLM, with its
    output kept off stdout (`prepare` prints the plan there)."""
    with contextlib.redirect_stdout(sys.stderr):
        return _judge(args)


def _judge(args: Sequence[str]) -> Verdict:
    from vllm.engine.arg_utils import AsyncEngineArgs  # noqa: PLC0415 - imports vLLM: seconds
    from vllm.usage.usage_lib import UsageContext  # noqa: PLC0415 - imports vLLM: seconds
    from vllm.v1.spec_decode.dynamic.utils import build_dynamic_sd_schedule_lookup  # noqa: PLC0415 - imports vLLM: seconds

    # vLLM logs its config again when it starts; here its INFO lines would also break `prepare`'s JSON
    # on stdout, and some of its loggers set their own levels, so logging is muted below ERROR meanwhile.
    logging.disable(logging.WARNING)
    stage = "parser"
    try:
        missing = no_device()
        if missing:  # on this platform even vLLM's parser fails (its defaults build a DeviceConfig)
            return Verdict(True, missing, UNCHECKED)
        with contextlib.redirect_stderr(io.StringIO()):
            parsed = _make_parser().parse_args(list(args))
        cli_args_module().validate_parsed_serve_args(parsed)
        stage = "engine"
        config = AsyncEngineArgs.from_cli_args(parsed).create_engine_config(UsageContext.OPENAI_API_SERVER)
        spec = config.speculative_config
        stage = "scheduler"
        if spec is not None and spec.num_speculative_tokens_per_batch_size:
            build_dynamic_sd_schedule_lookup(
                spec.num_speculative_tokens_per_batch_size,
                vllm_max_batch_size=config.scheduler_config.max_num_seqs,
                vllm_num_speculative_tokens=spec.num_speculative_tokens,
            )
        resolved = (
            None
            if spec is None
            else (
                ("method", spec.method),
                ("model", spec.model),
                ("num_speculative_tokens", spec.num_speculative_tokens),
            )
        )
        return Verdict(True, spec=resolved)
    except ImportError as err:  # a package this machine lacks (Ray for multi-node): not the configuration's fault
        return Verdict(True, f"not conclusive on this machine: {' '.join(str(err).split())}", "inconclusive")
    except SystemExit as err:  # argparse's own --help/--version paths
        return Verdict(False, f"vLLM's argument parser exited ({err.code})", "parser")
    except Exception as err:  # noqa: BLE001 - any exception is vLLM refusing the configuration
        if _MISSING_PACKAGE.search(str(err)):  # e.g. Ray for multi-node, raised as ValueError
            return Verdict(True, f"not conclusive on this machine: {' '.join(str(err).split())}", "inconclusive")
        missing = no_device()
        if missing:  # the device went away meanwhile: still no verdict on the configuration
            return Verdict(True, missing, UNCHECKED)
        found = _pydantic_reason(err)
        reason, keys = found if found else (" ".join(str(err).split()) or type(err).__name__, ())
        if stage == "engine":
            stage = _stage(err)
        if stage == "scheduler":
            keys = ("num_speculative_tokens_per_batch_size",)
        return Verdict(False, reason, stage, keys)
    finally:
        logging.disable(logging.NOTSET)
        forget_once_messages()


def no_device() -> str | None:
    """Why vLLM cannot build an engine config in this process (no platform, so no device), else None."""
    from vllm.platforms import current_platform  # noqa: PLC0415 - imports vLLM: seconds

    if current_platform.is_unspecified() or not current_platform.device_type:
        return (
            "vLLM sees no GPU or other device in this process (its platform is unspecified), so it cannot "
            "judge the engine configuration here; the server's start checks it again"
        )
    return None


def forget_once_messages() -> None:
    """Let vLLM's warning_once/info_once lines that fired while logging was muted print again.

    They are remembered by functools.lru_cache (vllm/logger.py) whether or not they were printed, so
    the server, which builds the same config after the check in this process, would never show them.
    The caches are cleared whole: the check runs before vLLM has printed anything worth deduplicating."""
    from vllm import logger as vllm_logger  # noqa: PLC0415 - imports vLLM: seconds

    for name in ("_print_debug_once", "_print_info_once", "_print_warning_once", "_print_error_once"):
        clear = getattr(getattr(vllm_logger, name, None), "cache_clear", None)
        if clear is not None:
            clear()


def _origin(verdict: Verdict, request: CheckRequest) -> str:
    """The plan's origin of the key vLLM complained about, as precisely as vLLM's message allows."""
    spec_origin, engine_origin = request.spec_origin, request.engine_origin
    text = verdict.reason.replace("-", "_")

    def named(key: str) -> bool:
        return key in verdict.keys or re.search(rf"(?<![A-Za-z0-9_]){re.escape(key)}(?![A-Za-z0-9_])", text) is not None

    if verdict.stage in ("speculative", "scheduler"):
        for key in [*verdict.keys, *sorted(spec_origin, key=len, reverse=True)]:
            if key in spec_origin and named(key):
                return f"speculative_config.{key} (from {spec_origin[key]})"
        sources = ", ".join(sorted(set(spec_origin.values()))) or "the command line"
        return f"speculative_config (from {sources})"
    for key in sorted(engine_origin, key=len, reverse=True):
        if named(key):
            return f"--{key.replace('_', '-')} (from {engine_origin[key]})"
    return "vLLM arguments"


def check_plan(request: CheckRequest, secrets: Sequence[str], path_map: Mapping[str, str]) -> Note | None:
    """Raise ConfigError (exit 2) naming the origin, vLLM's version and its reason when vLLM would refuse
    to start; return a Note when the check could not conclude on this machine or could not run here.
    `secrets`: values masked in whatever vLLM's words repeat (the secret variables' values)."""
    args = substitute_paths(serve_args(request.argv), path_map)
    verdict = judge(args)
    if verdict.ok:
        text = redact_text(verdict.reason, _secrets(args, secrets))
        return Note(text, checked=verdict.stage != UNCHECKED) if text else None
    reason = verdict.reason
    for original, stand_in in path_map.items():
        reason = reason.replace(stand_in, original)
    reason = redact_text(reason, _secrets(args, secrets))
    raise ConfigError(
        _origin(verdict, request),
        f"vLLM {request.vllm_version} refuses this configuration: {reason}".replace("  ", " "),
        "change the value named above (vLLM's reason is quoted)",
    )


__all__ = [
    "CheckRequest",
    "Note",
    "UNCHECKED",
    "Verdict",
    "check_plan",
    "forget_once_messages",
    "no_device",
    "judge",
    "local_paths",
    "serve_args",
    "substitute_paths",
    "unavailable",
    "MASK",
]
