"""Masking secrets in anything the launcher prints: env, argv, messages."""

from __future__ import annotations

from typing import Iterable, Mapping

MASK = "***"
_SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")
# Variables shown in the plan: the launcher's own and those of the libraries it drives.
SHOWN_PREFIXES = ("NIM_", "VLLM_", "HF_", "HUGGING", "NGC_", "AWS_", "GOOGLE_", "GCS_", "STORAGE_EMULATOR",
                  "CUDA_", "NVIDIA_", "TRANSFORMERS_", "TOKENIZERS_")


def is_secret_name(name: str) -> bool:
    """A name with a secret word as one of its parts (HF_TOKEN, --api-key, NGC_API_KEY): a count such as
    --max-num-batched-tokens is not a secret, and masking it would print a command that is not the one run."""
    upper = name.upper().replace("-", "_")
    parts = [p for p in upper.split("_") if p]
    return any(part == word or part == word + "S" and word == "CREDENTIAL" or (part.endswith(word) and part != word + "S")
               for part in parts for word in _SECRET_WORDS)


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    return {
        k: (MASK if is_secret_name(k) else v)
        for k, v in sorted(env.items())
        if k.upper().startswith(SHOWN_PREFIXES)
    }


def secret_values(env: Mapping[str, str]) -> list[str]:
    """Values to scrub from free text, longest first so that overlapping secrets are fully masked."""
    values = {v for k, v in env.items() if is_secret_name(k) and len(v) >= 4}
    return sorted(values, key=len, reverse=True)


def redact_text(text: str, secrets: Iterable[str]) -> str:
    for value in secrets:
        text = text.replace(value, MASK)
    return text


def redact_argv(argv: Iterable[str]) -> list[str]:
    """Mask the value after (or inside) an option such as --api-key or --hf-token."""
    out: list[str] = []
    mask_next = False
    for token in argv:
        if mask_next and not token.startswith("--"):
            out.append(MASK)
            mask_next = False
            continue
        mask_next = False
        if token.startswith("--") and is_secret_name(token.split("=", 1)[0]):
            if "=" in token:
                out.append(token.split("=", 1)[0] + "=" + MASK)
            else:
                out.append(token)
                mask_next = True
            continue
        out.append(token)
    return out
