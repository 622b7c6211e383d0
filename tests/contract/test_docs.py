"""The README stays a short front page, and every link in it and in docs/ leads somewhere that exists."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchors(path: Path) -> set[str]:
    found = set()
    fence = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fence = not fence
        m = None if fence else re.match(r"#+ (.*)", line)
        if m:
            slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            found.add(slug)
    return found


def test_readme_is_at_most_12_kb_and_starts_with_the_two_commands():
    text = README.read_text(encoding="utf-8")
    assert len(text.encode("utf-8")) <= 12 * 1024
    first_block = text.split("```", 2)[1]
    assert "make serve" in first_block and "make test" in first_block


@pytest.mark.parametrize("page", [README, *DOCS], ids=lambda p: p.name)
def test_every_local_link_exists(page):
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+://", target) or target.startswith("mailto:"):
            continue
        file, _, anchor = target.partition("#")
        path = (page.parent / file) if file else page
        assert path.exists(), f"{page.name}: {target}"
        if anchor and path.suffix == ".md":
            assert anchor in _anchors(path), f"{page.name}: {target}"


def test_the_readme_maps_every_page_of_docs():
    text = README.read_text(encoding="utf-8")
    for page in DOCS:
        assert f"docs/{page.name}" in text, page.name


def test_the_methods_table_is_generated_from_vllms_method_table():
    """docs/engine.md's methods table is scripts/methods_doc.py's rendering of engines/vllm/release/methods.py."""
    spec = importlib.util.spec_from_file_location("methods_doc", ROOT / "scripts" / "methods_doc.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    page = script.DOC.read_text(encoding="utf-8")
    assert script.BEGIN in page and script.rewritten(page) == page, "run: python scripts/methods_doc.py"
