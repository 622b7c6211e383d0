"""`plan` under hostile environments, arguments and model files: never an internal error, one error line on
failure, a valid JSON plan (no NaN) on success. bench/fuzz_plan.py runs the same cases by the ten thousand."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz_plan_cases import problem, random_case, run_case


@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(rnd=st.randoms(use_true_random=False))
def test_plan_follows_the_rules_for_any_case(tmp_path, rnd: random.Random):
    case = random_case(rnd)
    outcome = run_case(case, tmp_path / "case")
    assert problem(outcome) is None, (case, outcome)
