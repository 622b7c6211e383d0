"""The command line: `main` dispatches to one module per subcommand (cmd_*.py), imported lazily."""

from nim_specdec.cli.main import main

__all__ = ["main"]
