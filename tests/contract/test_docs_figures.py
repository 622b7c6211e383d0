"""The simulated figures the docs quote are the bench scripts' recorded output, block for block: a doc block
`<!-- figures:NAME -->` ... `<!-- /figures -->` must equal the block of that name in bench/recorded/
(what `python bench/bench_power.py --record ...` and `python bench/bench_pruning.py --record ...` wrote),
and each script must still print its sections (run small here; the recorded figures come from its full
run)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "bench" / "recorded" / "bench_power.md"
SCRIPTS = ("bench_power", "bench_pruning", "bench_selection", "bench_order")  # each records bench/recorded/<script>.md
DOCS = (ROOT / "docs" / "measuring.md", ROOT / "docs" / "tuning.md")
BLOCK = re.compile(r"<!-- figures:(\w+) -->\n(.*?)\n *<!-- /figures -->", re.S)


def blocks(text: str) -> list[tuple[str, str]]:
    """(name, body) of each block, the body's lines stripped of the indent a list item gives them."""
    return [(name, "\n".join(line.strip() for line in body.splitlines())) for name, body in BLOCK.findall(text)]


def test_the_parser_sees_a_changed_figure():
    text = RECORDED.read_text()
    name, body = blocks(text)[0]
    changed = text.replace(body.splitlines()[-1], body.splitlines()[-1].replace("%", "%%", 1), 1)
    assert dict(blocks(changed))[name] != body


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_figures_block_in_the_docs_is_the_scripts_recorded_output(doc):
    recorded = {k: v for name in SCRIPTS for k, v in blocks((RECORDED.parent / f"{name}.md").read_text())}
    found = blocks(doc.read_text())
    assert found, f"{doc.name} quotes no recorded figures"
    for name, body in found:
        assert name in recorded, f"{doc.name}: block {name} is not in bench/recorded/"
        assert body == recorded[name], f"{doc.name}: block {name} differs from bench/recorded/; copy it again"


@pytest.mark.parametrize("script", SCRIPTS)
def test_the_script_still_prints_the_recorded_sections(tmp_path, script):
    out = tmp_path / "small.md"
    recorded_file = RECORDED.parent / f"{script}.md"
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / f"{script}.py"), "--worlds", "20", "--record", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    small = blocks(out.read_text())
    assert [n for n, _ in small] == [n for n, _ in blocks(recorded_file.read_text())]
    # Same table shapes as the recorded run: the headers and row labels agree, only the figures move.
    recorded = dict(blocks(recorded_file.read_text()))
    for name, body in small:
        shape = lambda text: [line.split("|")[1] for line in text.splitlines() if line.startswith("|")]  # noqa: E731
        assert shape(body) == shape(recorded[name]), name
