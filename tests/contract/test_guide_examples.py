"""Every `docker run` example of the guide, written as environment plus arguments, gives the
plan the guide promises. One test per example."""

from __future__ import annotations

import json

from core_fixtures import facts
from nim_specdec.launch.resolve import plan_for
from nim_specdec.plan.plan_model import plan_json

NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 1}
NGRAM_STRING_ARGS = json.dumps({"speculative_config": json.dumps(NGRAM)})
EAGLE3_ARG = '{"method": "eagle3", "model": "eagle3_draft", "num_speculative_tokens": 3}'


def plan(env: dict, args: list[str], cache) -> dict:
    env = {"NIM_CACHE_PATH": str(cache), **env}
    return plan_json(plan_for(env, args, facts())[1])


def spec_arg(p: dict) -> dict:
    argv = p["argv"]
    return json.loads(argv[argv.index("--speculative-config") + 1])


def test_enable_builtin_method_eagle3_model(models):
    p = plan(
        {
            "NGC_API_KEY": "nvapi-secret",
            "NIM_SPECDEC_ENABLE": "1",
            "NIM_MODEL_NAME": "meta-llama/Llama-3.1-8B-Instruct",
        },
        [],
        models["cache"],
    )
    ws = f"{models['cache']}/workspace"
    assert p["mode"] == "model-specific"
    assert p["speculative"]["method"] == "eagle3"
    assert p["speculative"]["config"]["model"] == f"{ws}/eagle3_draft"
    assert p["draft"]["source"] == "hf://yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
    assert p["draft"]["chosen_by"] == "builtin"
    assert p["env"]["NGC_API_KEY"] == "***"
    assert "nvapi-secret" not in json.dumps(p)
    # NIM's name first (what a client of that NIM asks for), then the repository id: vLLM serves both.
    assert p["target"]["served_model_name"] == "meta/llama-3.1-8b-instruct"
    assert p["target"]["served_model_names"] == ["meta/llama-3.1-8b-instruct", "meta-llama/Llama-3.1-8B-Instruct"]
    i = p["argv"].index("--served-model-name")
    assert p["argv"][i + 1 : i + 3] == ["meta/llama-3.1-8b-instruct", "meta-llama/Llama-3.1-8B-Instruct"]
    assert p["argv"][:3] == ["vllm", "serve", f"{ws}/target"]


def test_enable_builtin_method_mtp_model(models):
    p = plan({"NIM_SPECDEC_ENABLE": "1", "NIM_MODEL_NAME": "deepseek-ai/DeepSeek-V3"}, [], models["cache"])
    assert p["speculative"]["config"] == {"method": "mtp", "num_speculative_tokens": 1}
    assert p["speculative"]["origin"] == {"method": "builtin", "num_speculative_tokens": "builtin"}
    assert p["draft"] is None


def test_disabled_serves_without_speculation_and_skips_the_draft(models):
    p = plan(
        {"NIM_MODEL_NAME": "meta-llama/Llama-3.1-8B-Instruct", "NIM_SPECDEC_ARGS": NGRAM_STRING_ARGS},
        [],
        models["cache"],
    )
    assert p["speculative"]["enabled"] is False
    assert p["draft"] is None
    assert "--speculative-config" not in p["argv"]
    assert any("NIM_SPECDEC_ARGS is ignored" in w for w in p["warnings"])


def test_override_forces_ngram_on_an_mtp_model(models):
    p = plan(
        {"NIM_SPECDEC_ENABLE": "1", "NIM_MODEL_NAME": "deepseek-ai/DeepSeek-V3", "NIM_SPECDEC_ARGS": NGRAM_STRING_ARGS},
        [],
        models["cache"],
    )
    assert p["speculative"]["config"] == NGRAM
    assert set(p["speculative"]["origin"].values()) == {"NIM_SPECDEC_ARGS"}
    assert "replacing the mtp" in p["speculative"]["reason"]
    assert spec_arg(p) == NGRAM


def test_model_free_ngram_argument(models):
    p = plan(
        {"NGC_API_KEY": "k", "NIM_MODEL_PATH": "hf://meta-llama/Llama-3.1-8B-Instruct"},
        ["--speculative-config", json.dumps(NGRAM)],
        models["cache"],
    )
    assert p["mode"] == "model-free"
    assert p["speculative"]["enabled"] is True
    assert p["speculative"]["config"] == NGRAM
    assert set(p["speculative"]["origin"].values()) == {"cli"}
    assert p["target"]["served_model_name"] == "meta-llama/Llama-3.1-8B-Instruct"


def test_model_free_mtp_argument(models):
    p = plan(
        {"NIM_MODEL_PATH": "ngc://org/model:tag"},
        ["--speculative-config", '{"method": "mtp", "num_speculative_tokens": 1}'],
        models["cache"],
    )
    assert p["target"]["source"] == "ngc://org/model@tag"
    assert spec_arg(p) == {"method": "mtp", "num_speculative_tokens": 1}
    assert p["draft"] is None


def test_bring_your_own_eagle3_draft(models):
    p = plan(
        {
            "NIM_MODEL_PATH": "hf://meta-llama/Llama-3.1-8B-Instruct",
            "NIM_DRAFT_MODEL_PATH": "hf://my-org/my-eagle3-draft",
        },
        ["--speculative-config", EAGLE3_ARG],
        models["cache"],
    )
    ws = f"{models['cache']}/workspace"
    assert p["draft"]["name"] == "eagle3_draft"
    assert p["draft"]["source"] == "hf://my-org/my-eagle3-draft"  # explicit source wins over the registered one
    assert spec_arg(p)["model"] == f"{ws}/eagle3_draft"


def test_explicit_draft_overrides_the_shipped_one_on_a_model_specific_nim(models):
    p = plan(
        {
            "NIM_SPECDEC_ENABLE": "1",
            "NIM_MODEL_NAME": "meta-llama/Llama-3.1-8B-Instruct",
            "NIM_DRAFT_MODEL_PATH": "s3://bucket/drafts/mine",
        },
        [],
        models["cache"],
    )
    assert p["draft"]["source"] == "s3://bucket/drafts/mine"
    assert p["draft"]["chosen_by"] == "NIM_DRAFT_MODEL_PATH"


def test_air_gapped_local_target_and_draft(models):
    p = plan(
        {"NIM_MODEL_PATH": str(models["target"]), "NIM_DRAFT_MODEL_PATH": str(models["draft"])},
        ["--speculative-config", EAGLE3_ARG],
        models["cache"],
    )
    ws = f"{models['cache']}/workspace"
    assert p["argv"][:3] == ["vllm", "serve", str(models["target"])]
    assert p["draft"] == {
        "name": "eagle3_draft",
        "source": str(models["draft"]),
        "path": f"{ws}/eagle3_draft",
        "chosen_by": "NIM_DRAFT_MODEL_PATH",
        "local_dir": str(models["draft"]),
        "commit": None,
        "commit_reason": None,
    }
    assert p["warnings"] == []


def test_payload_capture_example(models, tmp_path):
    path = tmp_path / "captures" / "traffic.jsonl"
    p = plan(
        {
            "NIM_SPECDEC_ENABLE": "1",
            "NIM_MODEL_PATH": str(models["target"]),
            "NIM_CAPTURE_ENABLE": "1",
            "NIM_CAPTURE_ARGS": json.dumps(
                {"path": str(path), "format": "mooncake_payload", "endpoint_pattern": "^/v1/chat/completions$"}
            ),
        },
        [],
        models["cache"],
    )
    assert p["capture"] == {
        "path": str(path),
        "format": "mooncake_payload",
        "endpoint_pattern": "^/v1/chat/completions$",
    }
    argv = p["argv"]
    middlewares = [argv[i + 1] for i, token in enumerate(argv) if token == "--middleware"]
    # One --middleware: vLLM warns about a repeated one ("Found duplicate keys --middleware").
    assert middlewares == ["nim_specdec.server.stack.NimCaptureAndEndpoints"]
    assert not path.exists()  # plan touches nothing
