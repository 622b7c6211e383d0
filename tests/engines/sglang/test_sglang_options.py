"""The option snapshot the launcher reads is SGLang's own parser's, regenerated in memory with SGLang's interpreter;
docs/sglang.md's method table is the method table's."""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path

from nim_specdec.engines.sglang.options import RELEASE, SNAPSHOTS, sglang_options, spelling_of

ROOT = Path(__file__).resolve().parents[3]
REGENERATE = "import json, runpy, sys; print(json.dumps(runpy.run_path(sys.argv[1])['snapshot']()))"


def test_the_snapshot_is_sglangs_parser(sglang_python):
    done = subprocess.run(
        [sglang_python, "-c", REGENERATE, str(ROOT / "scripts" / "sglang_options_gen.py")],
        capture_output=True, text=True, timeout=300, check=True, cwd=ROOT,
    )  # fmt: skip
    fresh = json.loads(done.stdout.strip().splitlines()[-1])
    stored = json.loads((SNAPSHOTS / f"{RELEASE}.json").read_text())
    assert fresh == stored, "stale snapshot: run $SGLANG_PYTHON scripts/sglang_options_gen.py"
    assert fresh["release"] == RELEASE


def test_the_snapshot_knows_the_speculative_options():
    options = sglang_options()
    assert options["--speculative-draft-model"].dest == "speculative_draft_model_path"
    assert options["--speculative-adaptive"].takes_value is False
    assert spelling_of("speculative_draft_model_path") == "--speculative-draft-model-path"
    assert spelling_of("max_running_requests") == "--max-running-requests"


def test_the_docs_method_table_is_the_method_tables():
    spec = importlib.util.spec_from_file_location("sglang_doc", ROOT / "scripts" / "sglang_doc.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    page = script.DOC.read_text(encoding="utf-8")
    assert script.rewritten(page) == page, "docs/sglang.md is stale: run python scripts/sglang_doc.py"
    assert "| `mtp` | `EAGLE` |" in page
