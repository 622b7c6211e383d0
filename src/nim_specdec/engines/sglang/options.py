"""SGLang's server options as its argument parser knows them, read from the snapshot of one release
(sglang_options/<release>.json, written by scripts/sglang_options_gen.py from SGLang's own parser): the field each
spelling sets and whether it takes a value. Reading the snapshot costs microseconds; importing SGLang, seconds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Mapping

RELEASE = "0.5.23"  # the SGLang release the launcher writes commands for and checks them against
SNAPSHOTS = Path(__file__).resolve().parent / "sglang_options"


@dataclass(frozen=True)
class Option:
    spelling: str  # as the parser registers it: --speculative-draft-model-path
    dest: str  # the field it sets: speculative_draft_model_path
    takes_value: bool
    many: bool  # takes several values (nargs * or +)


@cache
def sglang_options(release: str = RELEASE) -> Mapping[str, Option]:
    """Every spelling of the release's parser, aliases included, by spelling."""
    data = json.loads((SNAPSHOTS / f"{release}.json").read_text(encoding="utf-8"))
    return {
        spelling: Option(spelling, row["dest"], bool(row["takes_value"]), bool(row["many"]))
        for spelling, row in data["options"].items()
    }


def spelling_of(dest: str, release: str = RELEASE) -> str:
    """The long spelling SGLang's docs give a field (the first registered: --speculative-draft-model-path)."""
    for spelling, option in sglang_options(release).items():
        if option.dest == dest and spelling == "--" + dest.replace("_", "-"):
            return spelling
    return next(s for s, o in sglang_options(release).items() if o.dest == dest)
