"""Which targets an EAGLE3 head is trained for, and whether an export fits its target."""

from __future__ import annotations

import pytest

from nim_specdec_lab.demo_model import eagle3_config, llama_config
from nim_specdec_lab.draft.export_check import aux_problem, export_problems, target_problem, train_aux_problem


@pytest.mark.parametrize(
    "change, words",
    [
        ({}, None),
        ({"model_type": "bert", "architectures": ["BertModel"]}, "'bert' (BertModel)"),
        ({"model_type": "gpt_oss"}, "'gpt_oss'"),
        ({"text_config": {}}, "'llama'"),
        ({"vocab_size": None}, "vocab_size"),
        ({"hidden_size": 0}, "hidden_size"),
        ({"num_hidden_layers": True}, "num_hidden_layers"),
    ],
)
def test_target_problem(change, words):
    config = {**llama_config(2), **change}
    problem = target_problem(config)
    assert problem is None if words is None else words in problem


@pytest.mark.parametrize(
    "aux, layers, bad",
    [
        ((1, 2), 2, False),
        ((2, 16, 29), 32, False),
        ((0, 1), 2, True),
        ((1, 1), 2, True),
        ((1, 3), 2, True),
        ((), 2, True),
    ],
)
def test_train_aux_problem(aux, layers, bad):
    assert (train_aux_problem(aux, layers) is not None) is bad


def test_aux_problem_names_the_missing_layers():
    assert "[3]" in aux_problem([0, 1, 3], 2)
    assert aux_problem(["1"], 2) is not None


class _Ckpt:
    tensors: dict = {}

    def has_tensor(self, name):
        return False

    def find(self, name):
        return None


def test_the_demo_eagle3_draft_fits_the_demo_target():
    assert export_problems(eagle3_config(), _Ckpt(), llama_config(2), "draft") == []


@pytest.mark.parametrize(
    "change, words",
    [
        ({"hidden_size": 64, "target_hidden_size": 64}, "hidden"),
        ({"eagle_config": {"eagle_aux_hidden_state_layer_ids": [0, 1, 5]}}, "[5]"),
        ({"architectures": ["BertModel"]}, "BertModel"),
    ],
)
def test_an_export_that_does_not_fit(change, words):
    problems = export_problems({**eagle3_config(), **change}, _Ckpt(), llama_config(2), "trained draft")
    assert problems and any(words in p for p in problems), problems


def test_an_export_without_weights():
    assert any("no weights" in p for p in export_problems(eagle3_config(), None, llama_config(2), "d"))
