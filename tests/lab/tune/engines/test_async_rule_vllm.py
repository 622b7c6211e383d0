"""tune's async-scheduling rule (tune.engines.engine.async_scheduling) against each release's own decision: the
statements of VllmConfig.__post_init__ that settle `scheduler_config.async_scheduling`, taken from vLLM 0.32
(installed) and 0.33 and 0.34 (their wheels) and run on plain objects, for every method the release knows, both
runners (0.34: V2, its only one), with and without pipeline parallelism, padded drafter batches off (a key 0.34
removed), and async scheduling asked on, off or left to vLLM."""

from __future__ import annotations

import ast
import itertools
from functools import cache
from types import SimpleNamespace

import pytest

from nim_specdec_lab.tune.engines.engine import async_scheduling
from vllm_release_source import INSTALLED, literal_values, source

RELEASES = tuple(sorted({INSTALLED or "0.32.0", "0.32.0", "0.33.0", "0.34.0"}))
V2_ONLY = ("0.34.0",)  # no V1 runner, no disable_padded_drafter_batch  # a release not installed comes from its wheel
FIRST = "executor_backend"  # the first statement of the block (after the imports it needs, supplied here)
AFTER = "disable_nccl_for_dp_synchronization"  # the first statement after it


@cache
def _decision(version: str):
    """vLLM's statements as a function of (self, executor supports async, rocm): returns the decided value, or
    raises ValueError where vLLM refuses the configuration."""
    tree = ast.parse(source(version, "vllm/config/vllm.py"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "VllmConfig")
    post_init = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__post_init__")
    body = post_init.body
    start = next(i for i, n in enumerate(body) if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == FIRST)
    end = next(i for i in range(start, len(body)) if AFTER in ast.unparse(body[i]).split("\n", 1)[0])
    code = "\n".join(ast.unparse(n) for n in body[start:end])
    assert "async_scheduling" in code, f"vLLM {version}: the block moved"
    spec_source = source(version, "vllm/config/speculative.py")
    names = {
        "get_args": lambda values: values,
        "EagleModelTypes": literal_values(spec_source, "EagleModelTypes"),
        "NgramGPUTypes": literal_values(spec_source, "NgramGPUTypes"),
        "logger": SimpleNamespace(warning_once=lambda *a, **k: None, debug=lambda *a, **k: None),
    }
    text = "def decide(self, Executor, current_platform):\n" + "\n".join("    " + line for line in code.splitlines())
    text += "\n    return self.scheduler_config.async_scheduling"
    exec(compile(text, f"vllm-{version}/config/vllm.py", "exec"), names)  # noqa: S102 - vLLM's own statements
    methods = literal_values(spec_source, "SpeculativeMethod")
    return names["decide"], methods


def _vllm_says(version, runner, method, pp, given, padded_off):
    decide, _ = _decision(version)
    executor = SimpleNamespace(get_class=lambda _: SimpleNamespace(supports_async_scheduling=lambda: True))
    self = SimpleNamespace(
        parallel_config=SimpleNamespace(
            distributed_executor_backend="mp", enable_dbo=False, all2all_backend=None, pipeline_parallel_size=pp
        ),
        scheduler_config=SimpleNamespace(async_scheduling=given),
        speculative_config=None
        if method is None
        else SimpleNamespace(method=method, disable_padded_drafter_batch=padded_off),
        model_config=SimpleNamespace(runner_type="generate"),
        use_v2_model_runner=runner == "v2",
    )
    try:
        return decide(self, executor, SimpleNamespace(is_rocm=lambda: False))
    except ValueError:
        return "refused"


def _cases():
    for version in RELEASES:
        _, methods = _decision(version)
        runners = ("v2",) if version in V2_ONLY else ("v1", "v2")
        for runner, method, pp, given in itertools.product(runners, (None, *methods), (1, 2), (None, False)):
            yield version, runner, method, pp, given, False
        if version in V2_ONLY:
            continue
        for runner, method in itertools.product(runners, ("eagle3", "draft_model", "ngram")):
            yield version, runner, method, 1, None, True


CASES = list(_cases())


@pytest.mark.parametrize(
    "version,runner,method,pp,given,padded_off",
    CASES,
    ids=[f"{v}-{r}-{m}-pp{p}-{g}{'-unpadded' if u else ''}" for v, r, m, p, g, u in CASES],
)
def test_tunes_rule_is_vllms(version, runner, method, pp, given, padded_off):
    view = {"pipeline_parallel_size": pp, **({} if given is None else {"async_scheduling": given})}
    spec = {"disable_padded_drafter_batch": True} if padded_off else None
    expected = _vllm_says(version, runner, method, pp, given, padded_off)
    assert async_scheduling(view, "cuda", runner, method, version, spec) is expected


@pytest.mark.parametrize("version", RELEASES)
def test_ngram_async_scheduling_on_v2_is_new_in_033(version):
    """The fact the docs state: 0.32 turns async scheduling off for n-gram on either runner; 0.33 keeps it on V2;
    0.34 (V2 only) keeps it on for n-gram and suffix."""
    on_v2 = _vllm_says(version, "v2", "ngram", 1, None, False)
    assert on_v2 is (version != "0.32.0")
    if version in V2_ONLY:
        assert _vllm_says(version, "v2", "suffix", 1, None, False) is True
        return
    assert _vllm_says(version, "v1", "ngram", 1, None, False) is False
