"""docs/catalogue.md's table is generated from the built-in configs (scripts/catalogue_doc.py) and held to them."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from nim_specdec.plan.method.builtin import default_config_dir, load_registry

ROOT = Path(__file__).resolve().parents[3]
REGISTRY = load_registry(default_config_dir())


def _script():
    spec = importlib.util.spec_from_file_location("catalogue_doc", ROOT / "scripts" / "catalogue_doc.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_docs_table_is_the_catalogue():
    script = _script()
    page = script.DOC.read_text(encoding="utf-8")
    assert script.rewritten(page) == page, "docs/catalogue.md is stale: run python scripts/catalogue_doc.py"
    for entry in REGISTRY:
        assert f"| `{entry.model_id}` |" in page


def test_a_changed_entry_makes_the_page_stale():
    script = _script()
    page = script.DOC.read_text(encoding="utf-8")
    changed = [replace(e, nim_name="acme/renamed") if e.file == "gpt-oss-120b.json" else e for e in REGISTRY]
    assert script.rewritten(page, changed) != page
    assert "| `openai/gpt-oss-120b` | `acme/renamed` |" in script.render(changed)


def test_the_check_mode_says_the_page_is_current():
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "catalogue_doc.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_releases_column_is_each_releases_own_check():
    """A key new in 0.34 for DSpark plans on 0.34 only; a method 0.33 removed plans on 0.32 only."""
    script = _script()
    base = next(e for e in REGISTRY if e.method == "dspark")
    quantized = replace(base, speculative_config={**base.speculative_config, "draft_lm_head_quantization": "fp8"})
    medusa = replace(base, speculative_config={"method": "medusa", "model": "heads", "num_speculative_tokens": 3})
    assert script.plans_on(base) == ["0.32.0", "0.33.0", "0.34.0"]
    assert script.plans_on(quantized) == ["0.34.0"]
    assert script.plans_on(medusa) == ["0.32.0"]
