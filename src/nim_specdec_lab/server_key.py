"""The API key between the lab and a server: the key its own requests carry to a server it is pointed at, and
the key the servers it starts itself go without.

A server started with `--api-key` (or VLLM_API_KEY) answers 401 to /v1/* without one of its keys. The lab's
own requests (simulate's and tune-ngram's replay) carry the key in VLLM_API_KEY, the variable the server reads
and `nim-specdec smoke` sends, read once where a command starts.
AIPerf, which measures for bench and tune, takes a key only on its command line, where every process on the
machine can read it: so bench --url refuses a server that wants one, and the servers tune and bench --serve
start go without (they listen on 127.0.0.1 only; a key changes nothing they measure).
"""

from __future__ import annotations

from typing import Mapping, Sequence

from pydantic import SecretStr

from nim_specdec.errors import ConfigError
from nim_specdec.observe.smoke import bearer

KEY_VAR = "VLLM_API_KEY"
KEY_OPTION = "--api-key"
_WHICH_KEY = f"set {KEY_VAR} to one of the server's keys (its {KEY_OPTION} or {KEY_VAR})"


def server_key(environ: Mapping[str, str]) -> SecretStr | None:
    """The key in VLLM_API_KEY; None when unset or blank. A SecretStr: its repr and str never show it."""
    value = environ.get(KEY_VAR, "")
    return SecretStr(value) if value.strip() else None


def key_headers(key: SecretStr | None) -> dict[str, str]:
    """The Authorization header vLLM's --api-key checks; none without a key."""
    return bearer(key.get_secret_value()) if key is not None else {}


def key_refused(url: str, key: SecretStr | None) -> ConfigError:
    """What a 401 means, by whether a key was sent (the key itself is never part of the message)."""
    if key is None:
        return ConfigError(KEY_VAR, f"{url} answered 401: it wants an API key, and {KEY_VAR} is unset", _WHICH_KEY)
    return ConfigError(KEY_VAR, f"{url} answered 401: the server refused the key in {KEY_VAR}", _WHICH_KEY)


def aiperf_cannot_carry(url: str) -> ConfigError:
    """bench --url against a server that wants a key."""
    return ConfigError(
        "bench --url",
        f"{url} wants an API key, and AIPerf takes a key only on its command line, where every process on "
        "this machine can read it",
        "measure a server started without --api-key and VLLM_API_KEY (bench --serve starts its own on 127.0.0.1)",
    )


def keyless(env: Mapping[str, str], vllm_args: Sequence[str], who: str) -> tuple[dict[str, str], str | None]:
    """The environment of the servers `who` starts: the given one without VLLM_API_KEY, and a note saying so
    (None when there was none). --api-key among the vLLM arguments is refused: it is an argument the user
    typed for these servers, so it is named rather than dropped."""
    for token in vllm_args:
        if token.split("=", 1)[0] == KEY_OPTION:
            raise ConfigError(
                who,
                f"{KEY_OPTION} is among the vLLM arguments",
                f"drop it: {who}'s servers listen on 127.0.0.1 only, and AIPerf, which measures them, takes a key "
                "only on its command line",
            )
    if KEY_VAR not in env:
        return dict(env), None
    note = (
        f"{KEY_VAR} is left out of the servers {who} starts: they listen on 127.0.0.1 only, and AIPerf, which "
        "measures them, takes a key only on its command line"
    )
    return {name: value for name, value in env.items() if name != KEY_VAR}, note
