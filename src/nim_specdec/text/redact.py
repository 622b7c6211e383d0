"""Masking secrets in anything the launcher prints: env, argv, JSON values, URIs, messages.

A name is secret-like when one of its words (split at `_`, `-`, `.` and camelCase) is KEY, SECRET,
PASSWORD, PASSWD or CREDENTIAL(S), or when its last word is, or ends in, KEY or TOKEN (`HF_TOKEN`, `apiKey`,
`AWS_SECRET_ACCESS_KEY`, `AWS_ACCESS_KEY_ID`). `--max-num-batched-tokens` or `--tokenizer` are not: masking them would hide
the very settings a plan is read for. vLLM's parser also accepts any unambiguous prefix of an option
(`--api-k`) and underscores for dashes, so those spellings of its secret options count too.
"""  # noqa: E501

from __future__ import annotations

import json
import re
import shlex
from typing import Any, Iterable, Mapping

from nim_specdec.errors import printable

MASK = "***"
# config.variables.PASSTHROUGH_ARGS, spelt here because text sits below config (a test keeps them equal).
PASSTHROUGH_VARIABLE = "NIM_PASSTHROUGH_ARGS"
# Variables shown in the plan: the launcher's own and those of the libraries it drives.
SHOWN_PREFIXES = (
    "NIM_",
    "VLLM_",
    "HF_",
    "HUGGING",
    "NGC_",
    "AWS_",
    "GOOGLE_",
    "GCS_",
    "STORAGE_EMULATOR",
    "CUDA_",
    "NVIDIA_",
    "TRANSFORMERS_",
    "TOKENIZERS_",
)
# The options of the pinned vLLM release whose value is a secret (checked against the installed parser
# by tests/text/test_redact.py).
SECRET_OPTIONS = ("--api-key", "--hf-token")
# Those that take several values (vLLM's `--api-key K1 K2`, a list): every value up to the next option is masked.
MULTI_VALUE_OPTIONS = ("--api-key",)
_ANYWHERE = {"SECRET", "SECRETS", "PASSWORD", "PASSWORDS", "PASSWD", "CREDENTIAL", "CREDENTIALS", "KEY", "KEYS"}
_LAST_SUFFIXES = ("KEY", "KEYS", "TOKEN")
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+")
# user:password@ in a URI, and query parameters whose name is secret-like (token=, X-Amz-Signature=, ...).
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s?#]*@")
_QUERY_SECRET = re.compile(
    r"(?i)([?&;][^=&\s#]*(?:token|key|sig|signature|secret|password|passwd|credential|auth)[^=&\s#]*=)[^&\s#;]+"
)
# A short secret is masked only as a whole token, so that HF_TOKEN=test does not turn "testing" into
# "***ing"; a long one wherever it appears (an accidental match is then practically impossible).
_LONG_SECRET = 12
_MIN_SECRET = 4
# A cut secret (a preview, a truncated log line) is still found by its first or last characters: this many
# of a long secret are practically never an accident.
_CUT_SECRET = 8
# `key: value` or `key=value` in text that is not valid JSON: a quoted value (with escapes), a list, or a word.
_PAIR = re.compile(
    r"""(?P<q>["']?)(?<![A-Za-z0-9_.-])(?P<key>[A-Za-z][A-Za-z0-9_.-]*)(?P=q)\s*[:=]\s*"""
    r"""(?P<value>"(?:[^"\\]|\\.)*"?|'[^']*'?|\[[^\]]*\]?|[^\s,;{}\[\]"'&]+)"""
)


def _words(name: str) -> list[str]:
    return [w for w in _WORD_SPLIT.split(_CAMEL.sub(r"\1_\2", name).upper()) if w]


def is_secret_name(name: str) -> bool:
    words = _words(name)
    if not words:
        return False
    return any(w in _ANYWHERE for w in words) or words[-1].endswith(_LAST_SUFFIXES)


def is_secret_option(flag: str) -> bool:
    """A command-line option (with or without `=value`) whose value is a secret, in any spelling vLLM accepts."""
    bare = flag.split("=", 1)[0]
    if is_secret_name(bare):
        return True
    if not bare.startswith("--") or len(bare) < 3:
        return False
    dashed = bare.replace("_", "-").lower()
    return any(option.startswith(dashed) for option in SECRET_OPTIONS)


def is_secret_key(key: str) -> bool:
    """A JSON key (snake, kebab or camel case) that names a secret, including prefixes of vLLM's secret options."""
    return is_secret_name(key) or is_secret_option("--" + key.strip().lstrip("-"))


def mask_uri_credentials(text: str) -> str:
    return _QUERY_SECRET.sub(rf"\1{MASK}", _USERINFO.sub(rf"\1{MASK}@", text))


def mask_json(value: Any) -> Any:
    """`value` with every value under a secret-like key masked, at any depth."""
    if isinstance(value, dict):
        return {
            k: (MASK if isinstance(k, str) and is_secret_key(k) and value[k] is not None else mask_json(value[k]))
            for k in value
        }
    if isinstance(value, list):
        return [mask_json(v) for v in value]
    if isinstance(value, str):
        return _mask_json_text(value)  # a config given as a JSON string (`"speculative_config": "{...}"`)
    return value


def _mask_json_text(text: str) -> str:
    """A JSON object or array given as text, re-dumped with its secrets masked; other text as it was."""
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return mask_uri_credentials(mask_secret_pairs(text))
    try:
        value = json.loads(stripped)
    except (ValueError, RecursionError):
        return mask_uri_credentials(mask_secret_pairs(text))
    masked = mask_json(value)
    return text if masked == value else json.dumps(masked)


def _pair_key_is_secret(key: str) -> bool:
    # A prefix of a secret option counts from 5 characters (`api_k`): free text is full of `a` and `hf`.
    return is_secret_name(key) or (len(key) >= 5 and is_secret_key(key))


def mask_secret_pairs(text: str) -> str:
    """Text that may be broken JSON, a Python repr or `k=v` pairs, with the value of every secret-like key masked."""

    def one(match: re.Match) -> str:
        if not _pair_key_is_secret(match["key"]):
            return match[0]
        return match[0][: match.start("value") - match.start()] + MASK

    return _PAIR.sub(one, text)


_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*")
HIDDEN = "(not shown: it names a secret)"


def preview(text: str, limit: int = 80) -> str:
    """At most `limit` characters of `text` on one line, masked before it is cut (a cut secret is not found).
    Text that names a secret other than as `key: value` (`["--api-key", "K"]`) is not shown at all."""
    masked = mask_uri_credentials(mask_secret_pairs(text))
    if any(_pair_key_is_secret(word) for word in _WORD.findall(_PAIR.sub(" ", masked))):
        return HIDDEN
    flat = " ".join(masked.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


# How vLLM spells its options (`--max-num-seqs`, `--api_key`, `-tp`, `-O3`): lower case. A random key that
# starts with '-' has upper-case letters or digits where these have none, so it is masked as a value.
_OPTION_LIKE = re.compile(r"--[a-z][a-z0-9_-]*(?:[.=].*)?|-(?:[a-z]{1,3}|O[0-9]?)(?:[.=].*)?", re.DOTALL)


def _takes_many(flag: str) -> bool:
    dashed = flag.split("=", 1)[0].replace("_", "-").lower()
    return len(dashed) > 2 and any(option.startswith(dashed) for option in MULTI_VALUE_OPTIONS)


def redact_argv(argv: Iterable[str]) -> list[str]:
    """Mask the values after (or inside) a secret option, secret keys inside JSON values, URI credentials.
    Every value up to the next option is masked: vLLM's --api-key takes a list."""
    out: list[str] = []
    mask_next = many = False
    for token in argv:
        if mask_next and not _OPTION_LIKE.fullmatch(token):
            # A value whatever it starts with (one key in 64 drawn by token_urlsafe starts with '-'), and
            # `--api-key K1 K2`: every value until something spelled as vLLM spells its options.
            out.append(MASK)
            mask_next = many
            continue
        mask_next = False
        if token.startswith("--") and is_secret_option(token):
            if "=" in token:
                out.append(token.split("=", 1)[0] + "=" + MASK)
            else:
                out.append(token)
                mask_next, many = True, _takes_many(token)
            continue
        if token.startswith("--") and "=" in token:
            flag, value = token.split("=", 1)
            out.append(f"{flag}={_mask_json_text(value)}")
            continue
        out.append(_mask_json_text(token))
    return out


def redact_env_value(name: str, value: str) -> str:
    if is_secret_name(name):
        return MASK
    if name == PASSTHROUGH_VARIABLE:
        try:
            return shlex.join(redact_argv(shlex.split(value)))
        except ValueError:
            return MASK  # unbalanced quotes: the value cannot be split, so nothing in it can be told apart
    return _mask_json_text(value)


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    return {k: redact_env_value(k, v) for k, v in sorted(env.items()) if k.upper().startswith(SHOWN_PREFIXES)}


def secret_values(env: Mapping[str, str]) -> list[str]:
    """Values to scrub from free text, longest first so that overlapping secrets are fully masked."""
    values = {v for k, v in env.items() if is_secret_name(k) and len(v) >= _MIN_SECRET}
    return sorted(values, key=len, reverse=True)


def _spellings(secret: str) -> list[str]:
    """The forms a secret takes once printed: as it is, with white space collapsed (a one-line message),
    control characters escaped, JSON- or repr-escaped. Longest first."""
    flat = " ".join(secret.split())
    forms = {
        secret,
        flat,
        printable(secret),
        printable(flat),
        json.dumps(secret)[1:-1],
        repr(secret)[1:-1],
        secret.encode("unicode_escape").decode("ascii"),
    }
    return sorted((f for f in forms if len(f) >= _MIN_SECRET), key=len, reverse=True)


def _mask_cut(text: str, secret: str) -> str:
    """Mask what remains of a long secret cut at either end: a run of at least _CUT_SECRET of its first
    characters, or of its last."""
    head, tail = secret[:_CUT_SECRET], secret[-_CUT_SECRET:]
    start = text.find(head)
    while start >= 0:
        end = start + _CUT_SECRET
        while end < len(text) and end - start < len(secret) and text[end] == secret[end - start]:
            end += 1
        text = text[:start] + MASK + text[end:]
        start = text.find(head, start + len(MASK))
    start = text.find(tail)
    while start >= 0:
        k = start
        offset = len(secret) - _CUT_SECRET
        while k > 0 and offset > 0 and text[k - 1] == secret[offset - 1]:
            k, offset = k - 1, offset - 1
        text = text[:k] + MASK + text[start + _CUT_SECRET :]
        start = text.find(tail, k + len(MASK))
    return text


def redact_text(text: str, secrets: Iterable[str]) -> str:
    """`text` with every secret masked: by value before and after escaping, and what is left of a cut one."""
    forms = [form for secret in secrets for form in _spellings(secret)]
    for value in forms:
        if len(value) >= _LONG_SECRET:
            text = text.replace(value, MASK)
        elif value in text:
            text = re.sub(rf"(?<![A-Za-z0-9_]){re.escape(value)}(?![A-Za-z0-9_])", MASK, text)
    for value in forms:  # whole forms first, so that a cut is only looked for in what is left
        if len(value) >= _LONG_SECRET:
            text = _mask_cut(text, value)
    return mask_uri_credentials(text)


def redact_tree(value: Any, secrets: list[str]) -> Any:
    """A JSON-like document (the plan) with secrets masked by key, by value and in URIs, at any depth."""
    if isinstance(value, dict):
        return {
            k: (
                MASK
                if isinstance(k, str)
                and is_secret_key(k)
                and isinstance(value[k], (str, int, float))
                and not isinstance(value[k], bool)
                else redact_tree(value[k], secrets)
            )
            for k in value
        }
    if isinstance(value, list):
        return [redact_tree(v, secrets) for v in value]
    if isinstance(value, str):
        return redact_text(value, secrets)
    return value
