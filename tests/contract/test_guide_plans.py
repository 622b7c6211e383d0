"""The full public plan (preflight included, as `nim-specdec plan` prints it) of every guide example,
compared with the plans saved in tests/data/guide_plans.json before the plan became a typed value.

A change of the plan's shape or content shows here as a diff of plain JSON. To accept an intended
change, regenerate the file and review the diff:  PYTHONPATH=src:tests python tests/contract/test_guide_plans.py --write
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from core_fixtures import facts, make_models
from nim_specdec.launch.resolve import plan_for
from nim_specdec.plan.plan_model import plan_json
from nim_specdec.preflight import StaticProbe, preflight_inputs, run_preflight

GOLDEN = Path(__file__).parents[1] / "data" / "guide_plans.json"
ROOT = "{ROOT}"  # the test's temporary directory, in the saved plans
NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 1}
NGRAM_STRING_ARGS = json.dumps({"speculative_config": json.dumps(NGRAM)})
EAGLE3_ARG = '{"method": "eagle3", "model": "eagle3_draft", "num_speculative_tokens": 3}'
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"

# name -> (environment, vLLM arguments), as tests/contract/test_guide_examples.py writes the guide's examples.
CASES: dict[str, tuple[dict[str, str], list[str]]] = {
    "builtin-eagle3": ({"NGC_API_KEY": "nvapi-secret", "NIM_SPECDEC_ENABLE": "1", "NIM_MODEL_NAME": LLAMA}, []),
    "builtin-mtp": ({"NIM_SPECDEC_ENABLE": "1", "NIM_MODEL_NAME": "deepseek-ai/DeepSeek-V3"}, []),
    "disabled": ({"NIM_MODEL_NAME": LLAMA, "NIM_SPECDEC_ARGS": NGRAM_STRING_ARGS}, []),
    "override-ngram-on-mtp": (
        {"NIM_SPECDEC_ENABLE": "1", "NIM_MODEL_NAME": "deepseek-ai/DeepSeek-V3", "NIM_SPECDEC_ARGS": NGRAM_STRING_ARGS},
        [],
    ),
    "model-free-ngram": (
        {"NGC_API_KEY": "k", "NIM_MODEL_PATH": f"hf://{LLAMA}"},
        ["--speculative-config", json.dumps(NGRAM)],
    ),
    "model-free-mtp": (
        {"NIM_MODEL_PATH": "ngc://org/model:tag"},
        ["--speculative-config", '{"method": "mtp", "num_speculative_tokens": 1}'],
    ),
    "own-eagle3-draft": (
        {"NIM_MODEL_PATH": f"hf://{LLAMA}", "NIM_DRAFT_MODEL_PATH": "hf://my-org/my-eagle3-draft"},
        ["--speculative-config", EAGLE3_ARG],
    ),
    "explicit-draft-on-model-specific": (
        {"NIM_SPECDEC_ENABLE": "1", "NIM_MODEL_NAME": LLAMA, "NIM_DRAFT_MODEL_PATH": "s3://bucket/drafts/mine"},
        [],
    ),
    "air-gapped": (
        {"NIM_MODEL_PATH": f"{ROOT}/models/target", "NIM_DRAFT_MODEL_PATH": f"{ROOT}/models/draft"},
        ["--speculative-config", EAGLE3_ARG],
    ),
    "payload-capture": (
        {
            "NIM_SPECDEC_ENABLE": "1",
            "NIM_MODEL_PATH": f"{ROOT}/models/target",
            "NIM_CAPTURE_ENABLE": "1",
            "NIM_CAPTURE_ARGS": json.dumps(
                {
                    "path": f"{ROOT}/captures/traffic.jsonl",
                    "format": "mooncake_payload",
                    "endpoint_pattern": "^/v1/chat/completions$",
                }
            ),
        },
        [],
    ),
}


def printed_plan(name: str, root: Path) -> dict:
    """What `nim-specdec plan` prints for the case, with the temporary directory written as {ROOT}."""
    make_models(root)
    env_in, args = CASES[name]
    env = {"NIM_CACHE_PATH": f"{root}/cache", **{k: v.replace(ROOT, str(root)) for k, v in env_in.items()}}
    settings, plan = plan_for(env, args, facts())
    section = run_preflight(preflight_inputs(plan), settings.preflight, StaticProbe(None), warn=lambda _: None)
    plan = replace(plan, preflight=section)
    text = json.dumps(plan_json(plan)).replace(str(root), ROOT)
    # The compile cache's key hashes the (temporary) model path: the same plan under another directory.
    return json.loads(re.sub(r"/compile/vllm-[^/\"]*-[0-9a-f]{16}", "/compile/{KEY}", text))


@pytest.mark.parametrize("name", sorted(CASES))
def test_guide_example_plan_is_unchanged(name, tmp_path):
    saved = json.loads(GOLDEN.read_text())
    assert printed_plan(name, tmp_path) == saved[name]


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        plans = {name: printed_plan(name, Path(tmp) / name) for name in sorted(CASES)}
    GOLDEN.write_text(json.dumps(plans, indent=1, sort_keys=True) + "\n")
