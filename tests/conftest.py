from __future__ import annotations

import os
from pathlib import Path

import pytest

from core_fixtures import make_models

# The shared vLLM runs and the one demo model: session fixtures every test folder can use.
from vllm_runs import demo_model, eagle3_run, ngram_run, off_run, runs_dir  # noqa: F401


@pytest.fixture(scope="session", autouse=True)
def plans_match_the_published_schema():
    """Every plan a test turns into JSON in this process is checked against `nim-specdec plan --schema`."""
    import jsonschema

    from nim_specdec.plan import plan_model

    made: list[dict] = []
    original = plan_model.public_view

    def recording(value):
        out = original(value)
        if isinstance(value, plan_model.Plan):
            made.append(out)
        return out

    plan_model.public_view = recording
    yield made
    plan_model.public_view = original
    validator = jsonschema.Draft202012Validator(plan_model.plan_schema())
    bad = [(plan, error.message) for plan in made for error in validator.iter_errors(plan)]
    assert not bad, f"{len(bad)} of {len(made)} plans do not match the schema, first: {bad[0]}"


@pytest.fixture
def models(tmp_path: Path) -> dict[str, Path]:
    return make_models(tmp_path)


@pytest.fixture(scope="session")
def sglang_python() -> str:
    """SGLang's interpreter for the tests that run its own resolution: SGLANG_PYTHON, else .venv-sglang/bin/python in
    the checkout (`make sglang-venv`). Without it those tests fail, naming the target; they are not skipped."""
    root = Path(__file__).resolve().parents[1]
    python = os.environ.get("SGLANG_PYTHON") or str(root / ".venv-sglang" / "bin" / "python")
    if not Path(python).is_file():
        pytest.fail(f"no SGLang interpreter at {python}: run `make sglang-venv` or set SGLANG_PYTHON", pytrace=False)
    return python
