"""The hidden states' disk estimate and the refusal of a disk too small for them."""

from __future__ import annotations

import pytest

from nim_specdec.errors import ConfigError
from nim_specdec_lab.draft.disk_need import hidden_state_bytes, refuse_if_short


@pytest.mark.parametrize(
    "tokens, hidden, layers, dtype, expected",
    [
        (1000, 128, 4, 2, int(1000 * 128 * 4 * 2 * 1.25)),
        (10**6, 4096, 4, 2, int(10**6 * 4096 * 8 * 1.25)),  # a million tokens of an 8B target: about 38 GiB
        (0, 4096, 4, 2, 0),
    ],
)
def test_estimate(tokens, hidden, layers, dtype, expected):
    assert hidden_state_bytes(tokens, hidden, layers, dtype) == expected


@pytest.mark.parametrize("free, refused", [(5 * 2**20, True), (2**40, False), (int(1.25 * 2**20 * 8), False)])
def test_a_disk_too_small_is_one_line_naming_out(free, refused):
    need = hidden_state_bytes(2**20, 1, 4, 2)
    if not refused:
        refuse_if_short(need, free, "/data/out/work")
        return
    with pytest.raises(ConfigError) as err:
        refuse_if_short(need, free, "/data/out/work")
    line = err.value.one_line()
    assert line.startswith("--out: /data/out/work has 5.0 MiB free") and "need about 10.0 MiB" in line and "larger disk" in line
