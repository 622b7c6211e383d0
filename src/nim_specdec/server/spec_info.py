"""The speculative config a vLLM server process runs, read from its own command line (pure).

Served by the endpoints middleware at /v1/specdec/config so that a benchmark reports what the server
ran rather than what someone assumed. vLLM takes the config as one JSON value
(`--speculative-config JSON`, `--speculative-config=JSON`) or field by field (`--speculative-config.method
ngram`); the last mention of a field wins, as in vLLM's parser.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from nim_specdec.errors import LauncherError
from nim_specdec.text.redact import mask_json, redact_tree, secret_values
from nim_specdec.text.strict_json import loads

_NAMES = ("--speculative-config", "--speculative_config")


def _value(text: str) -> Any:
    try:
        return loads(text, "--speculative-config")  # nesting bounded: this runs inside the API server
    except LauncherError:
        return text


def speculative_config_from_argv(argv: Sequence[str]) -> dict[str, Any] | None:
    """The merged speculative config on `argv`, or None when there is none (speculation off)."""
    config: dict[str, Any] | None = None
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, eq, inline = arg.partition("=")
        base, dot, field = name.partition(".")
        if base in _NAMES:
            if eq:
                text = inline
            elif i + 1 < len(argv):
                text, i = argv[i + 1], i + 1
            else:
                break
            value = _value(text)
            config = dict(config or {})
            if dot and field:
                config[field.replace("-", "_")] = value
            elif isinstance(value, dict):
                config.update(value)
        i += 1
    return config


def shown_speculative_config(argv: Sequence[str], env: Mapping[str, str]) -> dict[str, Any] | None:
    """The config as the plan shows it: these endpoints answer without an API key, so every secret-like
    field (a loader's credentials), URI userinfo and any value of a secret variable is masked."""
    config = speculative_config_from_argv(argv)
    return None if config is None else redact_tree(mask_json(config), secret_values(env))


def spec_config_document(argv: Sequence[str], env: Mapping[str, str]) -> dict[str, Any]:
    return {"speculative_config": shown_speculative_config(argv, env), "source": "server command line"}
