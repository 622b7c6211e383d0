"""Merging configuration layers, lowest precedence first, remembering where each key came from."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

Layer = tuple[str, Mapping[str, Any] | None]  # (origin label, values)


def merge_spec(layers: Iterable[Layer]) -> tuple[dict[str, Any], dict[str, str]]:
    """Fold speculative_config layers. A layer whose method differs from the one so far replaces
    the whole config: forcing n-gram on an MTP model must not carry MTP-only keys along."""
    config: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for label, values in layers:
        if not values:
            continue
        method = values.get("method")
        if method is not None and config.get("method") not in (None, method):
            config, origin = {}, {}
        for key, value in values.items():
            config[key] = value
            origin[key] = label
    return config, origin


def merge_engine(layers: Iterable[Layer]) -> tuple[dict[str, Any], dict[str, str]]:
    """Fold engine-argument layers key by key; a higher layer wins."""
    merged: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for label, values in layers:
        for key, value in (values or {}).items():
            merged[key] = value
            origin[key] = label
    return merged, origin
