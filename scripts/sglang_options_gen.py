"""Writes engines/sglang/sglang_options/<version>.json from the SGLang this Python imports: every option of its
server's argument parser (`ServerArgs.add_cli_args`), with the field it sets and whether it takes a value.

The launcher reads the snapshot (microseconds) to read a user's SGLang arguments as SGLang's parser reads them,
without importing SGLang (seconds, and not installed where vLLM is served). Run it with SGLang's interpreter after
an upgrade: `$SGLANG_PYTHON scripts/sglang_options_gen.py` (the Makefile's sglang-venv makes one);
tests/engines/sglang/test_sglang_options.py regenerates it in memory and compares.
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib import metadata
from pathlib import Path

OUT_DIR = Path(__file__).resolve().parent.parent / "src" / "nim_specdec" / "engines" / "sglang" / "sglang_options"


def snapshot() -> dict:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
    from nim_specdec.engines.sglang.resolver_child import declare_torchvision_ops  # noqa: PLC0415 - src put on the path first

    declare_torchvision_ops()
    from sglang.srt.server_args import ServerArgs  # noqa: PLC0415 - after the torchvision operators are declared

    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    options = {}
    for action in parser._actions:
        if not action.option_strings or isinstance(action, argparse._HelpAction):
            continue
        takes_value = action.nargs != 0
        for spelling in action.option_strings:
            options[spelling] = {"dest": action.dest, "takes_value": takes_value, "many": action.nargs in ("*", "+")}
    return {"release": metadata.version("sglang"), "options": dict(sorted(options.items()))}


def main() -> int:
    data = snapshot()
    out = OUT_DIR / f"{data['release']}.json"
    out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {out.relative_to(OUT_DIR.parents[4])}: {len(data['options'])} options")
    return 0


if __name__ == "__main__":
    sys.exit(main())
