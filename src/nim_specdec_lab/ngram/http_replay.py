"""The HTTP edge of tune-ngram: replay captured requests greedily and record their token ids."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Sequence

from pydantic import SecretStr

from nim_specdec.errors import ConfigError, LauncherError, UnreachableError
from nim_specdec.files.output_files import write_atomically
from nim_specdec.files.regular_file import open_regular_text
from nim_specdec.observe.http_client import request_json
from nim_specdec.text.strict_json import loads
from nim_specdec_lab.ngram.corpus import RecordedRequest
from nim_specdec_lab.ngram.trace import CapturedRequest, greedy_payload, tail_payload, token_ids
from nim_specdec_lab.server_key import key_headers, key_refused


@dataclass(frozen=True)
class Replayed:
    line: int
    request: RecordedRequest | None
    error: str | None = None
    tail_mismatch: bool = False


# One replayed answer holds token ids and logprobs for at most a few thousand tokens.
MAX_ANSWER_BYTES = 64 * 1024 * 1024
# Saved records are read whole into memory.
MAX_RECORDS_BYTES = 4 * 1024**3
# A context length no model reaches: a record's max_model_len beyond it (or 0, negative, true) is not one.
MAX_MODEL_LEN = 2**31
_ODD_ANSWER = (ValueError, KeyError, IndexError, TypeError, AttributeError)


def http_json(
    url: str, body: dict[str, Any] | None = None, timeout: float = 600.0, key: SecretStr | None = None
) -> dict[str, Any]:
    """The JSON object a 2xx answer holds; ConfigError naming VLLM_API_KEY on 401, UnreachableError otherwise
    (deadline and size bounded). `key`: the server's API key, sent as vLLM's --api-key expects it."""
    status, answer = request_json(
        url, where=url, deadline=timeout, payload=body, max_bytes=MAX_ANSWER_BYTES, headers=key_headers(key)
    )
    if status == 401:
        raise key_refused(url, key)  # the body is the server's: it stays out of the message
    if not 200 <= status < 300 or not isinstance(answer, dict):
        detail = " ".join(str(answer).split())[:200]
        raise UnreachableError(url, f"HTTP {status}: {detail}", "check the server's log")
    return answer


def server_model(base_url: str, key: SecretStr | None = None) -> tuple[str, int | None]:
    """The first served model's name and its max_model_len (None if the server does not say)."""
    try:
        first = http_json(base_url.rstrip("/") + "/v1/models", timeout=30, key=key)["data"][0]
        name, length = str(first["id"]), first.get("max_model_len")
    except ConfigError:
        raise  # the key: VLLM_API_KEY is named
    except (LauncherError, *_ODD_ANSWER) as err:
        detail = err.problem if isinstance(err, LauncherError) else f"{type(err).__name__}: {err}"
        raise UnreachableError(
            "--url",
            f"cannot list the models at {base_url}/v1/models ({detail})",
            "point --url at a running OpenAI-compatible server",
        ) from None
    return name, (length if isinstance(length, int) and not isinstance(length, bool) else None)


def continuation(
    url: str, greedy: dict[str, Any], output: list[int], extra: int, key: SecretStr | None = None
) -> list[int] | None:
    """The `extra` tokens the target would emit after `output`; None if they cannot be had."""
    try:
        _, longer, _ = token_ids(http_json(url, tail_payload(greedy, len(output), extra), key=key))
    except (LauncherError, *_ODD_ANSWER):
        return None
    # Numerics may make the second run diverge; then there is no continuation to trust.
    return longer[len(output) :] if longer[: len(output)] == output else None


def _replay_one(
    base_url: str, captured: CapturedRequest, model: str, tail: int, max_model_len: int | None, key: SecretStr | None
) -> Replayed:
    url = base_url.rstrip("/") + captured.path
    greedy = greedy_payload(captured.payload, model)
    try:
        prompt, output, _ = token_ids(http_json(url, greedy, key=key))
    except LauncherError as err:
        return Replayed(captured.line, None, err.problem)
    except _ODD_ANSWER as err:
        return Replayed(
            captured.line, None, f"unexpected answer ({type(err).__name__}: {' '.join(str(err).split())[:200]})"
        )
    room = tail if max_model_len is None else min(tail, max_model_len - len(prompt) - len(output))
    continued = continuation(url, greedy, output, room, key) if room > 0 else []
    try:
        record = RecordedRequest.of(prompt, output, continued or ())
    except ValueError as err:  # ids out of range: the server's answer, not this request, is wrong
        return Replayed(captured.line, None, f"unexpected answer ({' '.join(str(err).split())[:200]})")
    return Replayed(captured.line, record, tail_mismatch=continued is None)


def replay(
    base_url: str,
    captured: Sequence[CapturedRequest],
    model: str,
    tail: int,
    concurrency: int,
    max_model_len: int | None = None,
    key: SecretStr | None = None,
) -> list[Replayed]:
    """Replay every request (in capture order in the result) with `concurrency` in flight."""
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        return list(pool.map(lambda c: _replay_one(base_url, c, model, tail, max_model_len, key), captured))


def save_records(path: str, records: Sequence[RecordedRequest], max_model_len: int | None) -> None:
    """One JSON line per request; each carries the server's model length for offline re-tuning."""
    rows = (
        json.dumps(
            {
                "prompt_token_ids": r.prompt,
                "output_token_ids": r.output,
                "tail_token_ids": r.tail,
                "max_model_len": max_model_len,
            }
        )
        for r in records
    )
    # Users' prompts and completions as token ids: owner-only, as the capture they came from.
    write_atomically(path, "".join(row + "\n" for row in rows), "--save-records", mode=0o600)


def _model_len(row: dict, where: str) -> int | None:
    value = row.get("max_model_len")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_MODEL_LEN:
        raise ConfigError(
            "--records",
            f"{where}: max_model_len {str(value)[:24]!r} is not a whole number from 1 to {MAX_MODEL_LEN}",
            "use a file written by --save-records",
        )
    return value


def load_records(path: str) -> tuple[list[RecordedRequest], int | None]:
    """The records and the model length they were recorded with (None if unknown)."""
    records, lengths = [], set()
    try:
        with open_regular_text(path, MAX_RECORDS_BYTES) as src:
            for number, line in enumerate(src, start=1):
                if not line.strip():
                    continue
                try:
                    row = loads(line, f"{path} line {number}", ConfigError)
                    records.append(
                        RecordedRequest.of(
                            row["prompt_token_ids"], row["output_token_ids"], row.get("tail_token_ids", ())
                        )
                    )
                except (ConfigError, KeyError, TypeError, ValueError, AttributeError):
                    raise ConfigError(
                        "--records", f"{path} line {number} is not a record", "use a file written by --save-records"
                    ) from None
                lengths.add(_model_len(row, f"{path} line {number}"))
    except UnicodeDecodeError:
        raise ConfigError("--records", f"{path} is not UTF-8 text", "use a file written by --save-records") from None
    except OSError as err:
        raise ConfigError("--records", f"cannot read {path} ({err.strerror})", "check the path") from None
    known = {n for n in lengths if n is not None}
    return records, (min(known) if known else None)
