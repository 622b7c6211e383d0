"""The target layers vLLM hands an EAGLE3 draft: where it reads their ids, per runner, and whether they exist."""

from __future__ import annotations

import pytest
from preflight_data import load_config

from nim_specdec.preflight import model_config as mc
from nim_specdec.preflight.compat_aux_layers import (
    DEFAULT,
    NESTED,
    NESTED_V2,
    TOP,
    aux_layer_problem,
    aux_layers,
    check_aux_layers,
    default_aux_layers,
)

WHERE = "draft /models/my-eagle3"


def _target(layers: int) -> dict:
    return {"architectures": ["LlamaForCausalLM"], "num_hidden_layers": layers, "hidden_size": 128}


@pytest.mark.parametrize(
    "layers, expected",
    [(32, (2, 16, 29)), (80, (2, 40, 77)), (61, (2, 30, 58)), (7, (2, 3, 4)), (2, (2, 1, -1)), (4, (2, 2, 1))],
)
def test_default_layers_are_vllms_formula(layers, expected):
    assert default_aux_layers(layers) == expected


@pytest.mark.parametrize(
    "draft, runner, ids, source, unread",
    [
        ({}, "v1", (2, 16, 29), DEFAULT, None),
        ({}, "v2", (2, 16, 29), DEFAULT, None),
        ({TOP: [1, 2, 3]}, "v1", [1, 2, 3], TOP, None),
        ({TOP: [1, 2, 3]}, "v2", [1, 2, 3], TOP, None),
        # The top-level key wins over eagle_config in both runners.
        ({TOP: [1, 2, 3], "eagle_config": {"eagle_aux_hidden_state_layer_ids": [4, 5, 6]}}, "v1", [1, 2, 3], TOP, None),
        ({"eagle_config": {"eagle_aux_hidden_state_layer_ids": [4, 5, 6]}}, "v1", [4, 5, 6], NESTED, None),
        # V2 does not read eagle_config.eagle_aux_hidden_state_layer_ids: the default, and the ids it left unread.
        ({"eagle_config": {"eagle_aux_hidden_state_layer_ids": [4, 5, 6]}}, "v2", (2, 16, 29), DEFAULT, [4, 5, 6]),
        ({"eagle_config": {"layer_ids": [7, 8, 9]}}, "v2", [7, 8, 9], NESTED_V2, None),
        ({"eagle_config": {"layer_ids": [7, 8, 9]}}, "v1", (2, 16, 29), DEFAULT, None),
        # vLLM's `if not layer_ids`: null and [] name nothing.
        ({TOP: [], "eagle_config": {"eagle_aux_hidden_state_layer_ids": [4, 5, 6]}}, "v1", [4, 5, 6], NESTED, None),
        ({TOP: None}, "v1", (2, 16, 29), DEFAULT, None),
        ({"eagle_config": {"eagle_aux_hidden_state_layer_ids": []}}, "v2", (2, 16, 29), DEFAULT, None),
        ({"eagle_config": "not a mapping"}, "v1", (2, 16, 29), DEFAULT, None),
        # A present value that is not a list is kept, so that the check names it (vLLM would ignore it).
        ({TOP: "1,2,3"}, "v1", "1,2,3", TOP, None),
    ],
)
def test_where_each_runner_reads_the_ids(draft, runner, ids, source, unread):
    found = aux_layers(draft, 32, runner)
    assert (found.ids, found.source, found.unread) == (ids, source, unread)


def test_the_speculators_format_names_them_at_the_top_level():
    draft = mc.draft_view(
        {"speculators_model_type": "eagle3", TOP: [2, 16, 29], "transformer_layer_config": {"model_type": "llama"}}
    )
    assert aux_layers(draft, 32, "v2").source == TOP


@pytest.mark.parametrize(
    "ids, layers, problem",
    [
        ([0, 1, 2], 2, None),  # 2 = L: the last layer's output, which vLLM's decoders capture
        ([1, 2, 4], 4, None),
        ((2, 16, 29), 32, None),
        ([0], 1, None),
        ([2, 1, -1], 2, "layer -1 does not exist"),
        ([0, 1, 3], 2, "layer 3 does not exist"),
        ([1, 2, 5], 4, "layer 5 does not exist"),
        ((2, 2, 1), 4, "layer 2 is named twice, and vLLM captures it once"),
        ([3, 1, 3], 4, "layer 3 is named twice, and vLLM captures it once"),
        ([0, "1", 2], 2, "'1' is not an integer"),
        ([0, 1.0, 2], 2, "1.0 is not an integer"),
        ([0, True, 2], 2, "True is not an integer"),
        ([0, None, 2], 2, "None is not an integer"),
        ([0, [1], 2], 2, "[1] is not an integer"),
        ("1,2,3", 4, "'1,2,3' is not a list of layer ids"),
        (3, 4, "3 is not a list of layer ids"),
        ({"a": 1}, 4, "{'a': 1} is not a list of layer ids"),
    ],
)
def test_ids_must_be_distinct_layers_of_the_target(ids, layers, problem):
    assert aux_layer_problem(ids, layers) == problem


def _fix(key: str, layers: int) -> str:
    return f"set {key} in the draft's config.json to the target layers it was trained on (distinct integers in [0, {layers}])"  # noqa: E501


@pytest.mark.parametrize(
    "draft, layers, runner, result, message",
    [
        ({}, 32, "v1", "pass", ""),
        ({"eagle_config": {"eagle_aux_hidden_state_layer_ids": [0, 1, 2]}}, 2, "v1", "pass", ""),
        (
            # The failure FINDINGS records: vLLM's default on a 2-layer target, a shape error at the first request.
            {},
            2,
            "v1",
            "fail",
            f"{WHERE}: EAGLE3 auxiliary layers [2, 1, -1] ({DEFAULT}) do not fit the 2-layer target: layer -1 does "
            f"not exist; {_fix(NESTED, 2)}",
        ),
        (
            {},
            5,
            "v1",
            "fail",
            f"{WHERE}: EAGLE3 auxiliary layers [2, 2, 2] ({DEFAULT}) do not fit the 5-layer target: layer 2 is named "
            f"twice, and vLLM captures it once; {_fix(NESTED, 5)}",
        ),
        (
            {},
            2,
            "v2",
            "fail",
            f"{WHERE}: EAGLE3 auxiliary layers [2, 1, -1] ({DEFAULT}) do not fit the 2-layer target: layer -1 does "
            f"not exist; {_fix(TOP, 2)}",
        ),
        (
            {TOP: [0, 1, 9]},
            4,
            "v1",
            "fail",
            f"{WHERE}: EAGLE3 auxiliary layers [0, 1, 9] ({TOP}) do not fit the 4-layer target: layer 9 does not "
            f"exist; {_fix(TOP, 4)}",
        ),
        (
            {"eagle_config": {"eagle_aux_hidden_state_layer_ids": [0, "1", 2]}},
            4,
            "v1",
            "fail",
            f"{WHERE}: EAGLE3 auxiliary layers [0, '1', 2] ({NESTED}) do not fit the 4-layer target: '1' is not an "
            f"integer; {_fix(NESTED, 4)}",
        ),
        (
            {"eagle_config": {"eagle_aux_hidden_state_layer_ids": [0, 1, 2]}},
            2,
            "v2",
            "fail",
            f"{WHERE}: EAGLE3 auxiliary layers [2, 1, -1] ({DEFAULT}; the V2 model runner does not read {NESTED}) "
            f"do not fit the 2-layer target: layer -1 does not exist; {_fix(TOP, 2)}",
        ),
        (
            # V2 on a target where the default exists: it runs, on layers the draft was not trained on.
            {"eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 16, 30]}},
            32,
            "v2",
            "warn",
            f"{WHERE}: vLLM's V2 model runner does not read {NESTED} [1, 16, 30]: the target hands the draft layers "
            f"[2, 16, 29] ({DEFAULT}), not the ones it was trained on; copy them to {TOP} at the top level of the "
            "draft's config.json",
        ),
        ({"eagle_config": {"eagle_aux_hidden_state_layer_ids": [2, 16, 29]}}, 32, "v2", "pass", ""),
    ],
)
def test_the_check_names_the_draft_the_ids_the_layer_count_and_the_key_to_set(draft, layers, runner, result, message):
    check = check_aux_layers(draft, _target(layers), WHERE, runner)
    assert (check.name, check.result, check.message) == ("compatibility.aux_layers", result, message)


def test_figures_say_which_ids_and_where_from():
    check = check_aux_layers({TOP: [1, 2, 4]}, _target(4), WHERE, "v1")
    assert dict(check.figures) == {"aux_layer_ids": "[1, 2, 4]", "source": TOP, "target_num_layers": 4, "runner": "v1"}


@pytest.mark.parametrize(
    "target, reason",
    [
        (None, "the target's config.json is not available locally"),
        ({"hidden_size": 128}, "the target's config.json gives no num_hidden_layers"),
    ],
)
def test_without_the_targets_layer_count_the_check_is_skipped(target, reason):
    check = check_aux_layers({}, target, WHERE)
    assert (check.result, check.problem) == ("skipped", reason)


def test_a_published_pair_passes_with_its_own_ids():
    """AQ-MedAI's Kimi-K2 EAGLE3 draft names [2, 30, 58] under eagle_config; Kimi-K2 has 61 layers."""
    check = check_aux_layers(
        load_config("AQ-MedAI--Kimi-K2-Instruct-eagle3"), load_config("moonshotai--Kimi-K2-Instruct"), WHERE, "v1"
    )
    assert check.result == "pass" and check.figures["aux_layer_ids"] == "[2, 30, 58]"
