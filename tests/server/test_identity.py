"""What /v1/version and /v1/metadata say and which key the readiness probe shows vLLM (pure functions)."""

from __future__ import annotations

from argparse import Namespace
from types import SimpleNamespace

import pytest

import nim_specdec
from nim_specdec.server.identity import (
    metadata_document,
    resolved_method,
    served_model_names,
    server_api_key,
    version_document,
)


@pytest.mark.parametrize(
    "api_key, env, expected",
    [
        (["k1", "k2"], {}, "k1"),
        (["k1", "k2"], {"VLLM_API_KEY": "from-env"}, "k1"),  # --api-key wins over VLLM_API_KEY, as in vLLM
        (["", "k2"], {}, "k2"),  # vLLM drops empty keys
        (None, {"VLLM_API_KEY": "from-env"}, "from-env"),
        ([], {"VLLM_API_KEY": "from-env"}, "from-env"),
        (None, {"VLLM_API_KEY": ""}, None),
        (None, {}, None),
    ],
)
def test_server_api_key_follows_vllms_choice(api_key, env, expected):
    assert server_api_key(Namespace(api_key=api_key), env) == expected


def test_server_api_key_without_vllms_arguments_reads_the_environment():
    assert server_api_key(None, {"VLLM_API_KEY": "k"}) == "k"
    assert server_api_key(None, {}) is None


@pytest.mark.parametrize(
    "args, expected",
    [
        (Namespace(served_model_name=["demo", "alias"], model="/ws/target"), ["demo", "alias"]),
        (Namespace(served_model_name="demo", model="/ws/target"), ["demo"]),
        (Namespace(served_model_name=None, model="/ws/target"), ["/ws/target"]),
        (None, []),
    ],
)
def test_served_model_names(args, expected):
    assert served_model_names(args) == expected


def test_resolved_method_reads_vllms_speculative_config():
    assert resolved_method(SimpleNamespace(speculative_config=SimpleNamespace(method="draft_model"))) == "draft_model"
    assert resolved_method(SimpleNamespace(speculative_config=None)) is None
    assert resolved_method(None) is None


def test_version_document():
    assert version_document("0.32.0") == {
        "release": nim_specdec.__version__,
        "api": "1.0.0",
        "nim_specdec": nim_specdec.__version__,
        "vllm": "0.32.0",
    }


@pytest.mark.parametrize(
    "config, method, expected",
    [
        ({"method": "ngram", "num_speculative_tokens": 3}, None, {"enabled": True, "method": "ngram"}),
        (
            {"model": "/ws/draft", "num_speculative_tokens": 3},
            "draft_model",
            {"enabled": True, "method": "draft_model"},
        ),
        (None, None, {"enabled": False, "method": None}),
    ],
)
def test_metadata_document(config, method, expected):
    document = metadata_document(["demo"], config, method, "0.32.0")
    assert document["speculative_decoding"] == {**expected, "config": config}
    assert document["modelInfo"] == [{"shortName": "demo"}] and document["served_model_names"] == ["demo"]
    assert document["versions"] == {"nim_specdec": nim_specdec.__version__, "vllm": "0.32.0"}
