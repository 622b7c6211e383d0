"""What bench's two flows share: the --concurrency values and writing report.json, report.md and the plots."""

from __future__ import annotations

import json
from pathlib import Path

from nim_specdec.errors import ConfigError


def concurrencies(text: str, several: bool) -> tuple[int, ...]:
    from nim_specdec_lab.cli.cmd_tune import parse_concurrencies  # noqa: PLC0415 - cmd_bench builds the CLI

    values = parse_concurrencies(str(text))
    if len(values) > 1 and not several:
        raise ConfigError("--concurrency", f"{text!r} names several concurrencies", "give one, or use --serve")
    return values


def write_report(report: dict, out: Path) -> None:
    from nim_specdec.common.output_files import write_atomically  # noqa: PLC0415 - cmd_bench builds the CLI
    from nim_specdec_lab.specbench.plots import write_plots  # noqa: PLC0415 - cmd_bench builds the CLI
    from nim_specdec_lab.specbench.report_md import markdown  # noqa: PLC0415 - cmd_bench builds the CLI

    write_atomically(str(out / "report.json"), json.dumps(report, indent=2) + "\n", "--out")
    write_atomically(str(out / "report.md"), markdown(report), "--out")
    write_plots(report, out)
