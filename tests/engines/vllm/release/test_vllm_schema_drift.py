"""The installed vLLM matches the snapshot the launcher keeps of its release (vllm_schemas/<version>.json)."""

from __future__ import annotations

import dataclasses
import typing

from nim_specdec.engines.vllm.release.vllm_schema import knowledge_for
from nim_specdec.engines.vllm.spec import spec_schema
from nim_specdec.launch.facts import installed_vllm


def _literal_values(tp) -> set[str]:
    out: set[str] = set()
    for arg in typing.get_args(tp):
        out |= _literal_values(arg) if typing.get_args(arg) else {arg} if isinstance(arg, str) else set()
    return out


def _installed():
    flavor, version = installed_vllm()
    assert flavor is not None, "vLLM is not installed here"
    return knowledge_for(version)


def test_installed_vllm_has_a_snapshot():
    known = _installed()
    assert known.exact, f"no snapshot for the installed vLLM {known.version}"


def test_fields_match_installed_vllm():
    from vllm.config.speculative import SpeculativeConfig  # noqa: PLC0415 - costs seconds, only here

    installed = {f.name for f in dataclasses.fields(SpeculativeConfig) if f.init} - spec_schema.INTERNAL_FIELDS
    assert installed == set(_installed().fields)
    assert installed <= set(spec_schema.KINDS)


def test_methods_match_installed_vllm():
    from vllm.config import speculative  # noqa: PLC0415

    known = _installed()
    assert _literal_values(speculative.SpeculativeMethod) == set(known.methods)
    assert _literal_values(speculative.MTPModelTypes) == set(known.mtp_methods)


def test_snapshot_matches_installed_vllm():
    """Options, speculative spellings, enums, bounds and nullable keys the fast path reads without vLLM."""
    generate = _schema_generator()

    assert generate() == _installed().data


def _schema_generator():
    """The developer script that writes vllm_schemas/<version>.json (scripts/, not shipped in the package)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[4] / "scripts" / "vllm_schema_gen.py"
    spec = importlib.util.spec_from_file_location("vllm_schema_gen", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.generate
