"""The lab's inputs end as one configuration error, never exit 1: out-of-range token ids in records, traces
that Python's JSON cannot hold, and grids of millions of candidates."""

from __future__ import annotations

import json

import pytest

from nim_specdec.errors import ConfigError
from nim_specdec_lab.ngram.corpus import MAX_TOKEN_ID, RecordedRequest
from nim_specdec_lab.ngram.grid import MAX_GRID, make_grid, parse_int_set
from nim_specdec_lab.ngram.http_replay import load_records
from nim_specdec_lab.ngram.trace import parse_capture
from nim_specdec_lab.suffix import grid as suffix_grid


@pytest.mark.parametrize("ids", [[-1], [MAX_TOKEN_ID], [2**70], [1.5], ["7"], [True], [None], "123", {"a": 1}])
def test_token_ids_out_of_range_or_of_the_wrong_type_are_refused(ids):
    with pytest.raises(ValueError, match="token id|not a list"):
        RecordedRequest.of([1, 2], ids)


def test_token_ids_in_range_are_kept_numpy_integers_too():
    import numpy as np

    assert RecordedRequest.of([0, MAX_TOKEN_ID - 1], np.array([3, 4])).output == (3, 4)


@pytest.mark.parametrize(
    "row",
    [
        {"prompt_token_ids": [1, -1], "output_token_ids": [2]},
        {"prompt_token_ids": [1], "output_token_ids": [2**40]},
        "[" * 100000,
        '{"prompt_token_ids": [' + "9" * 5000 + '], "output_token_ids": [1]}',
    ],
)
def test_records_with_bad_ids_or_unreadable_json_are_one_configuration_error(tmp_path, row):
    path = tmp_path / "records.jsonl"
    path.write_text(row if isinstance(row, str) else json.dumps(row))
    with pytest.raises(ConfigError, match="line 1 is not a record"):
        load_records(str(path))


@pytest.mark.parametrize(
    "line,fragment",
    [
        ("[" * 100000, "nested too deeply"),
        ('{"timestamp": 1, "payload": {"prompt": "x", "seed": ' + "9" * 5000 + "}}", "cannot be read"),
    ],
)
def test_trace_lines_python_cannot_hold_are_one_configuration_error(line, fragment):
    with pytest.raises(ConfigError, match=fragment):
        parse_capture([line])


@pytest.mark.parametrize("text", ["1-999999999999", "1-2000", "9" * 5000, "1," * 6000])
def test_huge_ranges_are_refused_before_they_are_built(text):
    with pytest.raises(ValueError):
        parse_int_set(text)


def test_a_grid_of_more_than_the_cap_is_refused():
    values = tuple(range(1, 65))
    with pytest.raises(ValueError, match=f"more than {MAX_GRID}"):
        make_grid(values, values, values)
    assert len(make_grid((1, 2), (1, 2), (2, 3))) == 8
    many = tuple(range(1, 20))
    with pytest.raises(ValueError, match="candidates"):
        suffix_grid.make_grid(many, many, many, (1.0,), (0.1,))
    with pytest.raises(ValueError):
        suffix_grid.parse_values("1" * 5000, int, 1)
    with pytest.raises(ValueError, match="not finite"):
        suffix_grid.parse_values("inf", float, 0)
