"""The pure checks around a training run: trainable targets, auxiliary layers, disk estimates, the export's fit."""

from __future__ import annotations

import pytest

from nim_specdec.errors import EXIT_CONFIG, EXIT_MATERIALIZE
from nim_specdec_lab.demo_model import LEARNABLE, LEARNABLE_AUX_LAYERS, llama_config
from nim_specdec_lab.draft.training import checks
from nim_specdec_lab.draft.training.errors import DiskTooSmallError, TrainingFailedError, UnsupportedTargetError

LEARNABLE_CONFIG = llama_config(LEARNABLE.layers)


def test_the_learnable_target_is_trainable():
    shape = checks.target_shape(LEARNABLE_CONFIG, "target")
    assert (shape.layers, shape.hidden, shape.vocab, shape.head_dim) == (4, 128, 330, 64)


@pytest.mark.parametrize(
    "change, words",
    [
        ({"model_type": "gpt2"}, "model_type 'gpt2'"),
        ({"text_config": {"model_type": "llama"}}, "model_type"),
        ({"num_hidden_layers": 0}, "num_hidden_layers"),
        ({"vocab_size": None}, "vocab_size"),
        ({"vocab_size": 1}, "vocabulary of 1"),
        ({"hidden_size": True}, "hidden_size"),
    ],
)
def test_a_target_without_a_training_path_is_one_line_naming_it(change, words):
    with pytest.raises(UnsupportedTargetError) as caught:
        checks.target_shape({**LEARNABLE_CONFIG, **change}, "/models/t")
    line = caught.value.one_line()
    assert words in line and line.startswith("/models/t: ") and "\n" not in line
    assert "NIM_DRAFT_MODEL_PATH" in line and caught.value.exit_code == EXIT_CONFIG


@pytest.mark.parametrize(
    "layers, requested, chosen",
    [
        (4, None, LEARNABLE_AUX_LAYERS),
        (2, None, (1, 2)),
        (32, None, (2, 16, 29)),  # vLLM's own default where the target is deep
        (4, (1, 3), (1, 3)),
    ],
)
def test_aux_layers_exist_in_the_target(layers, requested, chosen):
    assert checks.choose_aux_layers(layers, requested, "t") == chosen


@pytest.mark.parametrize("requested", [(0, 1, 2), (1, 2, 5), (2, 2, 3), ()])
def test_aux_layers_that_do_not_exist_are_refused(requested):
    with pytest.raises(
        UnsupportedTargetError, match="do not exist in a 4-layer target; choose distinct layers from 1 to 4"
    ):
        checks.choose_aux_layers(4, requested, "t")


def test_hidden_state_bytes_is_tokens_times_hidden_times_states_times_dtype():
    assert checks.hidden_state_bytes(1_000_000, 4096, 4, 2) == 32_768_000_000


def test_disk_estimate_counts_checkpoints_of_the_whole_model_and_the_export():
    shape = checks.target_shape(LEARNABLE_CONFIG, "t")
    head = checks.head_parameters(shape, 3)
    # fc 3H*H, attention over 2H inputs, MLP, lm_head, norms.
    assert head == 3 * 128 * 128 + (128 * 256 + 2 * 64 * 256 + 128 * 128) + 3 * 128 * 256 + 330 * 128 + 4 * 128
    assert checks.work_bytes(1_000, head) == 3 * (2_000 + 12 * head) + 4 * head


def test_a_small_disk_is_one_line_with_both_figures():
    checks.check_disk(10 * 2**20, 10 * 2**20, "/work")
    with pytest.raises(DiskTooSmallError) as caught:
        checks.check_disk(2**20, 3 * 2**20, "/work")
    assert caught.value.one_line() == (
        "/work: training needs about 3.0 MiB for checkpoints and the export, 1.0 MiB are free; "
        "free space there or choose a work directory on a larger volume"
    )


def _export_config(**changes) -> dict:
    config = {
        **llama_config(1),
        "architectures": ["LlamaForCausalLMEagle3"],
        "draft_vocab_size": 330,
        "target_hidden_size": 128,
        "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 2, 4], "use_aux_hidden_state": True},
    }
    config.update(changes)
    return config


def test_an_export_that_fits_passes_the_launchers_preflight():
    checks.check_export(_export_config(), None, LEARNABLE_CONFIG, "draft")


@pytest.mark.parametrize(
    "changes, words",
    [
        ({"eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 2, 5]}}, "auxiliary layers [1, 2, 5]"),
        ({"target_hidden_size": 256}, "target hidden size of 256"),
        ({"vocab_size": 331, "draft_vocab_size": 331}, "vocabulary of 331"),
        ({"architectures": ["GPT2LMHeadModel"]}, "architecture"),
    ],
)
def test_an_export_that_does_not_fit_is_a_training_failure(changes, words):
    with pytest.raises(TrainingFailedError) as caught:
        checks.check_export(_export_config(**changes), None, LEARNABLE_CONFIG, "draft")
    assert words in caught.value.one_line() and caught.value.exit_code == EXIT_MATERIALIZE
