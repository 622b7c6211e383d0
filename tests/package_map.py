"""Reading a package's map: the docstring of its __init__.py, a line per folder or file (the launcher's plan/ and
engines/vllm/, the lab's tune/, simulation/, bench/, ngram/). One reader for every map test."""

from __future__ import annotations

import ast
import re
from pathlib import Path

# A map line: two spaces per level of nesting, the name (a folder ends in "/"), two or more spaces, what it decides.
ENTRY = re.compile(r"^((?:  )*)([\w.<>-]+/?)\s{2,}\S")


def map_entries(doc: str) -> set[str]:
    """The names a map lists, a nested one as its folder's path (`sub/a.py`)."""
    entries, parents = set(), []
    for line in doc.splitlines():
        m = ENTRY.match(line)
        if not m:
            continue
        depth, name = len(m.group(1)) // 2, m.group(2)
        assert depth <= len(parents), f"map line nested under no folder: {line!r}"
        parents = parents[:depth]
        entries.add("".join(parents) + name)
        if name.endswith("/"):
            parents.append(name)
    return entries


def docstring(path: Path) -> str:
    """A module's docstring, empty where it has none."""
    return ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
