"""Run inside a process whose PYTHONPATH puts one vLLM release first
(tests/engines/vllm/release/test_release_wheels.py).

stdin: a JSON list of [name, serve arguments]. stdout: a JSON object name -> None where that release's own
serve-argument parser and validate_parsed_serve_args take the arguments and every key of the speculative
config they carry is one SpeculativeConfig accepts as input (with a method of that release), else the
reason. The release's CPU platform is forced: a GPU wheel's parser builds a DeviceConfig.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import sys
import typing

os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
MODULES = ("vllm.entrypoints.common.cli_args", "vllm.entrypoints.launchers.cli_args")


def _cli_args():
    for name in MODULES:
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError:
            continue
    raise SystemExit("no serve-argument module in this vLLM")


def _methods(tp) -> set[str]:
    if typing.get_origin(tp) is typing.Literal:
        return {a for a in typing.get_args(tp) if isinstance(a, str)}
    return {m for arg in typing.get_args(tp) for m in _methods(arg)}


def main() -> int:
    import vllm
    from vllm.config import speculative
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    cli_args = _cli_args()

    class Parser(FlexibleArgumentParser):
        def error(self, message: str):
            raise ValueError(message)

    inputs = {f.name for f in dataclasses.fields(speculative.SpeculativeConfig) if f.init}
    methods = _methods(speculative.SpeculativeMethod)
    out: dict[str, str | None] = {"__release__": getattr(vllm, "__version__", "?")}
    for name, args in json.load(sys.stdin):
        try:
            parsed = cli_args.make_arg_parser(Parser()).parse_args(args)
            cli_args.validate_parsed_serve_args(parsed)
            spec = parsed.speculative_config
            spec = json.loads(spec) if isinstance(spec, str) else spec
            problem = None
            if spec:
                extra = sorted(set(spec) - inputs)
                if extra:
                    problem = f"SpeculativeConfig takes no {extra}"
                elif spec.get("method") is not None and spec["method"] not in methods:
                    problem = f"no method {spec['method']!r}"
            out[name] = problem
        except (ValueError, SystemExit) as err:
            out[name] = f"{type(err).__name__}: {err}"
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
