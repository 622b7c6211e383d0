"""What a simulation runs on: the records (saved, or replayed from a capture against a server) and the n-gram
setting in use now (from --current, NIM_SPECDEC_ARGS or the server's own endpoint)."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import SecretStr

from nim_specdec.errors import ConfigError, LauncherError, UnreachableError
from nim_specdec.files.regular_file import open_regular_text
from nim_specdec.observe.smoke import http_get
from nim_specdec.text.strict_json import loads
from nim_specdec_lab.ngram.grid import ngram_params
from nim_specdec_lab.ngram.trace import parse_capture

MAX_TRACE_BYTES = 4 * 1024**3


@dataclass(frozen=True)
class RecordSource:
    """Where the token ids come from: records saved earlier, or a capture replayed against a server that does not
    speculate (with the API key the server wants, read at the command's edge)."""

    records: str | None = None
    trace: str | None = None
    url: str | None = None
    model: str | None = None  # None: the server's first model
    concurrency: int = 4
    max_model_len: int | None = None  # None: what the records or the server say
    save_records: str | None = None
    key: SecretStr | None = None


def load_records(source: RecordSource, k_max: int, command: str):
    """(records, model length, notes) from saved records or from a replay."""
    from nim_specdec_lab.ngram import http_replay  # noqa: PLC0415 - the replay: +10 modules (~10 ms) on --help

    if source.records:
        if source.trace or source.url:
            raise ConfigError("--records", "given together with --trace/--url", "use either saved records or a replay")
        records, saved_len = http_replay.load_records(source.records)
        if not any(r.output for r in records):
            raise ConfigError(
                "--records",
                f"{source.records} holds no request with output tokens",
                "use a file written by --save-records",
            )
        return records, source.max_model_len or saved_len, []
    if not (source.trace and source.url):
        raise ConfigError(command, "needs --trace and --url (or --records)", f"see nim-specdec {command} --help")
    try:
        with open_regular_text(source.trace, MAX_TRACE_BYTES) as src:
            captured = parse_capture(src)
    except OSError as err:
        raise ConfigError("--trace", f"cannot read {source.trace} ({err.strerror})", "check the path") from None
    except UnicodeDecodeError:
        raise ConfigError("--trace", f"{source.trace} is not UTF-8 text", "point --trace at a JSONL capture") from None
    key = source.key  # a server started with --api-key answers 401 without it
    model, server_len = http_replay.server_model(source.url, key)
    # Accepted drafts are counted up to k tokens past a request's end: fetch k + 1 more.
    max_model_len = source.max_model_len or server_len
    replayed = http_replay.replay(
        source.url, captured, source.model or model, k_max + 1, source.concurrency, max_model_len, key
    )
    failed = [r for r in replayed if r.request is None]
    notes = [f"line {r.line}: {r.error}" for r in failed[:3]]
    if failed:
        notes.insert(0, f"{len(failed)} of {len(replayed)} requests failed and were left out")
    mismatched = sum(r.tail_mismatch for r in replayed)
    if mismatched:
        notes.append(
            f"{mismatched} requests could not be continued past their end; accepted drafts there are not predicted"
        )
    records = [r.request for r in replayed if r.request is not None]
    if not records:
        raise UnreachableError(
            "--url",
            f"every replayed request failed ({notes[1] if len(notes) > 1 else 'no detail'})",
            "check the server and the capture",
        )
    if source.save_records:
        http_replay.save_records(source.save_records, records, max_model_len)
    return records, max_model_len, notes


def current_setting(current: str | None, specdec_args: str | None = None, url: str | None = None):
    """The n-gram setting in use now (NgramParams), or None when there is none or it is another method.
    `current`: --current; `specdec_args`: NIM_SPECDEC_ARGS as the command's edge read it (--current wins); `url`:
    the server asked where neither is given."""
    from nim_specdec.config.specdec_args import VARIABLE, parse_specdec_args  # noqa: PLC0415 - +3 modules (~6 ms) on --help

    text = current or specdec_args
    if text:
        where = "--current" if current else VARIABLE
        obj = loads(text, where)  # depth, duplicate keys and numbers checked: one line naming `where`
        config = parse_specdec_args(text)[0] if isinstance(obj, dict) and "speculative_config" in obj else obj
        params = ngram_params(config)
        if params is None and current:
            raise ConfigError(
                "--current", "is not an n-gram speculative_config", "give method ngram with num_speculative_tokens"
            )
        return params
    if url:
        # The launcher's endpoint: what the server at --url runs (usually nothing: it should not speculate).
        status, body = http_get(url.rstrip("/") + "/v1/specdec/config", timeout=30)
        if status == 200:
            try:
                return ngram_params(loads(body, "--url").get("speculative_config"))
            except (LauncherError, ValueError, AttributeError):
                return None
    return None
