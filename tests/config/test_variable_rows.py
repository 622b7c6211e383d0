"""A variable is one row of the table: its settings field, default, parsing and docs follow from the row; the
docs/sources.md table is the table's too; NIM_SPECDEC_ARGS and the arctic switch are parsed with the settings."""

from __future__ import annotations

import dataclasses
import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nim_specdec.config import variables as var
from nim_specdec.config.settings import Settings, parse_settings
from nim_specdec.config.specdec_args import SpecdecArgs, parse_specdec_args
from nim_specdec.config.table_reader import READERS, read_rows, table_fields
from nim_specdec.config.variable_table import KINDS, declare
from nim_specdec.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "docs" / "sources.md"
# Rows with no field of their own that another step reads: NIM_CAPTURE_ARGS with NIM_CAPTURE_ENABLE (the capture
# reader), NIM_STRICT_VARIABLES with the names nobody reads (config.settings.ignored_or_refused).
READ_WITH_ANOTHER = {var.CAPTURE_ARGS, var.STRICT_VARIABLES}


def _doc_script():
    spec = importlib.util.spec_from_file_location("variables_doc", ROOT / "scripts" / "variables_doc.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_sources_table_is_the_table():
    script = _doc_script()
    page = SOURCES.read_text(encoding="utf-8")
    assert script.rewritten(page, "sources.md") == page, "docs/sources.md is stale: run python scripts/variables_doc.py"
    listed = var.documented(page="sources.md")
    assert len(listed) >= 12 and all(f"| `{v.name}` |" in page for v in listed)


def test_every_row_lands_somewhere():
    settings = Settings()  # each section a field of the settings, named as the rows name it
    for v in var.TABLE.values():
        assert v.kind in KINDS and (v.reader or v.kind) in READERS, v.name
        if v.field is None:
            assert v.vllm is not None or v.internal or v.name in READ_WITH_ANOTHER, v.name
        else:
            owner = getattr(settings, v.section) if v.section else settings
            assert v.attribute in {f.name for f in dataclasses.fields(owner)}, v.name


def test_a_temporary_table_with_a_new_row_is_read_and_documented():
    table = dict(var.TABLE)  # the launcher's table stays as it is
    declare("NIM_TEST_KNOB", "int", 4, "A knob only this test has.", table=table, lo=1, hi=9, field="test_knob")
    assert read_rows({"NIM_TEST_KNOB": " 7 "}, table)["test_knob"] == 7
    assert read_rows({}, table)["test_knob"] == 4
    with pytest.raises(ConfigError) as err:
        read_rows({"NIM_TEST_KNOB": "10"}, table)
    assert err.value.one_line().startswith("NIM_TEST_KNOB: value 10 is out of range; use an integer from 1 to 9")

    @dataclasses.dataclass(frozen=True)
    @table_fields(table=table)
    class Shape:
        pass

    assert Shape().test_knob == 4 and Shape(test_knob=5).test_knob == 5
    assert "| `NIM_TEST_KNOB` | integer 1 to 9 | `4` | no | A knob only this test has. |" in _doc_script().render(table)
    assert "NIM_TEST_KNOB" not in var.TABLE


# Run in a fresh interpreter: the rows are declared before the settings classes are made, as config.variables'
# rows are; then the settings have the fields, parse them, and the docs list them.
ONE_ROW = textwrap.dedent(
    """
    import importlib.util, sys

    from nim_specdec.config.variable_table import declare

    declare("NIM_TEST_KNOB", "number", 2.5, "A knob.", lo=0, hi=10, field="test_knob")
    declare("NIM_TEST_PARTS", "int", 3, "Parts.", lo=1, hi=8, field="download.test_parts", reader="whole")

    from nim_specdec.config.settings import parse_settings
    from nim_specdec.errors import ConfigError

    assert parse_settings({}).test_knob == 2.5 and parse_settings({}).download.test_parts == 3
    given = parse_settings({"NIM_TEST_KNOB": "7", "NIM_TEST_PARTS": "5.0"})
    assert (given.test_knob, given.download.test_parts) == (7.0, 5)
    try:
        parse_settings({"NIM_TEST_KNOB": "11"})
    except ConfigError as err:
        print(err.one_line())
    spec = importlib.util.spec_from_file_location("doc", sys.argv[1])
    doc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(doc)
    print(doc.render())
    """
)


def test_one_row_is_a_settings_field_parsed_and_documented():
    done = subprocess.run(
        [sys.executable, "-c", ONE_ROW, str(ROOT / "scripts" / "variables_doc.py")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "NIM_TEST_KNOB: '11' is out of range; set a number from 0 to 10" in done.stdout
    assert "| `NIM_TEST_KNOB` | number 0 to 10 | `2.5` | no | A knob. |" in done.stdout


def test_a_class_default_for_a_rows_field_is_refused():
    with pytest.raises(TypeError, match="NIM_SERVER_PORT row's"):

        @table_fields("engine_variables")
        class Twice:
            port: int = 9000


ARGS = '{"speculative_config": "{\\"method\\": \\"ngram\\"}", "max-num-seqs": 4}'


def test_specdec_args_are_parsed_with_the_settings():
    on = parse_settings({var.SPECDEC_ENABLE: "1", var.SPECDEC_ARGS: ARGS}).speculation
    assert on.specdec == SpecdecArgs({"method": "ngram"}, {"max_num_seqs": 4}) and on.specdec_args == ARGS
    off = parse_settings({var.SPECDEC_ARGS: ARGS}).speculation
    assert off.specdec is None  # off: ignored by the plan, with a warning
    assert parse_settings({var.SPECDEC_ENABLE: "1", var.SPECDEC_ARGS: "  "}).speculation.specdec is None
    assert (
        parse_settings({var.SPECDEC_ARGS: "{not json"}).speculation.specdec_args == "{not json"
    )  # off: refused nowhere


@pytest.mark.parametrize("raw", ["{not json", "[1]", '{"a": 1, "A": 2}', '{"speculative_config": {}}'])
def test_a_bad_specdec_args_is_the_same_error_at_the_edge(raw):
    with pytest.raises(ConfigError) as direct:
        parse_specdec_args(raw)
    with pytest.raises(ConfigError) as edge:
        parse_settings({var.SPECDEC_ENABLE: "1", var.SPECDEC_ARGS: raw})
    assert edge.value.one_line() == direct.value.one_line() and edge.value.where == var.SPECDEC_ARGS
