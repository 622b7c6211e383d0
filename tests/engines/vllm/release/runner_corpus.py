"""Generated cases for the model-runner differential test: speculative methods, schedules, data parallelism,
every feature of vLLM 0.32's `_get_v2_model_runner_unsupported_features`, the features that force V2, CUDA
graph and compilation settings (DBO under each of them), async scheduling asked on or off (with and without
pipeline parallelism) and VLLM_USE_V2_MODEL_RUNNER, as vLLM serve arguments after `--model TARGET`."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

SCHEDULE = [[1, 2, 3], [3, 256, 0]]
ENVS = (None, "0", "1")


@dataclass(frozen=True)
class Case:
    id: str
    args: tuple[str, ...]  # vLLM serve arguments after --model TARGET
    env: str | None  # VLLM_USE_V2_MODEL_RUNNER, None when unset
    schedule: bool
    hisparse: bool = False  # set on the built config (the CPU build refuses HiSparse before the runner matters)


def _methods(models: dict[str, Path]) -> dict[str, dict | None]:
    k3 = {"num_speculative_tokens": 3}
    return {
        "off": None,
        "ngram": {"method": "ngram", **k3, "prompt_lookup_max": 4, "prompt_lookup_min": 1},
        "draft_model": {"method": "draft_model", "model": str(models["draft-copy"]), **k3},
        "eagle3": {"method": "eagle3", "model": str(models["draft-eagle3"]), **k3},
        "eagle3-parallel": {"method": "eagle3", "model": str(models["draft-eagle3"]), **k3, "parallel_drafting": True},
        "heterogeneous": {
            "method": "draft_model",
            "model": str(models["draft-other"]),
            **k3,
            "use_heterogeneous_vocab": True,
            "draft_sample_method": "greedy",
        },
        "suffix": {"method": "suffix", **k3},
        "custom_class": {"method": "custom_class", "model": "my_package.proposers.Proposer", **k3},
    }


# Engine features (vLLM serve arguments); DBO and micro-batching need a DeepEP all-to-all backend in vLLM.
_A2A = ("--all2all-backend", "deepep_low_latency")
FEATURES: dict[str, tuple[str, ...]] = {
    "plain": (),
    "dp2": ("--data-parallel-size", "2"),
    "external-launcher-pp2": ("--distributed-executor-backend", "external_launcher", "--pipeline-parallel-size", "2"),
    "pp2": ("--pipeline-parallel-size", "2"),
    "dbo": ("--enable-dbo", *_A2A),
    "ubatch2": ("--ubatch-size", "2", *_A2A),
    "ubatch1": ("--ubatch-size", "1"),
    "watermark": ("--watermark-config", json.dumps({"key": 7, "allow_target_only_watermarking": True})),
    "lora-dbo": ("--enable-lora", "--enable-dbo", *_A2A),
    "async": ("--async-scheduling",),
    "no-async": ("--no-async-scheduling",),
    "pp2-async": ("--pipeline-parallel-size", "2", "--async-scheduling"),
    "pp2-no-async": ("--pipeline-parallel-size", "2", "--no-async-scheduling"),
}
GRAPHS: dict[str, tuple[str, ...]] = {
    "default": (),
    "eager": ("--enforce-eager",),
    "O0": ("-O0",),
    "O1": ("-O", "1"),
    "O3": ("--optimization-level", "3"),
    "full": ("-cc.cudagraph_mode", "FULL"),
    "decode-only": ("--compilation-config", json.dumps({"cudagraph_mode": "full_decode_only"})),
    "piecewise": ("--compilation-config.cudagraph_mode", "PIECEWISE"),
    # piecewise graphs without piecewise compilation: vLLM drops them before it picks the runner
    "O0-piecewise": ("--optimization-level", "0", "-cc.cudagraph_mode", "PIECEWISE"),
    "stock-compile-piecewise": ("--compilation-config", json.dumps({"mode": 1, "cudagraph_mode": "PIECEWISE"})),
    "mode-none-full-and-piecewise": ("-cc.mode", "NONE"),
    "dynamo-once-piecewise": ("-cc.mode", "DYNAMO_TRACE_ONCE", "-cc.cudagraph_mode", "piecewise"),
}


def _case(name: str, spec: dict | None, feature: str, graphs: str, env: str | None, schedule: bool) -> Case:
    args = [*GRAPHS[graphs], *FEATURES[feature]]  # graphs first: the plan reads `--flag -O0` as a value of --flag
    if feature == "watermark" and spec is not None:
        if spec.get("method") != "eagle3" or spec.get("parallel_drafting"):
            # vLLM watermarks only eagle/eagle3/mtp/dspark drafts, without parallel drafting
            feature, args = "plain", list(GRAPHS[graphs])
        else:
            spec = {**spec, "draft_sample_method": "probabilistic"}  # what vLLM asks of a watermarked draft
    if spec is not None:
        if schedule:
            spec = {**spec, "num_speculative_tokens_per_batch_size": SCHEDULE}
        args += ["--speculative-config", json.dumps(spec)]
    label = f"{name}{'+schedule' if schedule else ''}/{feature}/{graphs}/env={env}"
    return Case(label, tuple(args), env, schedule and spec is not None)


def all_cases(models: dict[str, Path], sampled: int = 260, seed: int = 26) -> list[Case]:
    """Every method and every feature once under each value of the variable, then a seeded sample of
    combinations (method x schedule x feature x CUDA graphs x variable)."""
    methods = _methods(models)
    cases: dict[str, Case] = {}

    def add(case: Case) -> None:
        cases.setdefault(case.id, case)

    for env in ENVS:
        for name, spec in methods.items():
            for schedule in (False, True) if spec else (False,):
                add(_case(name, spec, "plain", "default", env, schedule))
        for feature in FEATURES:
            add(_case("ngram", methods["ngram"], feature, "default", env, True))
            add(_case("eagle3", methods["eagle3"], feature, "default", env, True))
            add(_case("off", None, feature, "default", env, False))
        for graphs in GRAPHS:
            add(_case("ngram", methods["ngram"], "plain", graphs, env, True))
            add(_case("off", None, "dbo", graphs, env, False))
        for feature in ("async", "no-async", "pp2-async", "pp2-no-async"):
            for name, spec in methods.items():
                add(_case(name, spec, feature, "default", env, False))
        for name in ("off", "ngram"):
            spec = methods[name]
            add(
                Case(
                    f"{name}/hisparse/env={env}",
                    ("--speculative-config", json.dumps(spec)) if spec else (),
                    env,
                    False,
                    hisparse=True,
                )
            )
    rng = random.Random(seed)
    names, features, graphs = sorted(methods), sorted(FEATURES), sorted(GRAPHS)
    target = len(cases) + sampled
    while len(cases) < target:
        name = rng.choice(names)
        add(_case(name, methods[name], rng.choice(features), rng.choice(graphs), rng.choice(ENVS), rng.random() < 0.6))
    return list(cases.values())
