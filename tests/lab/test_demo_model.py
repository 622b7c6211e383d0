"""The offline demo model: complete, deterministic, idempotent, and shaped as vLLM's CPU backend needs."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import strict_json
from nim_specdec_lab.demo_model import (
    COMPLETE_MARKER,
    HEAD_DIM,
    PARTS,
    SPECIAL_TOKENS,
    VOCAB,
    eagle3_tensor_shapes,
    make_demo_model,
    part_complete,
    successor_map,
)


def digest(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("demo")
    assert make_demo_model(root) == {part: True for part in PARTS}
    return root


def test_every_part_is_complete(made):
    assert all(part_complete(made / part) for part in PARTS)
    for part in PARTS:
        assert (made / part / "config.json").is_file() and (made / part / "model.safetensors").is_file()
    for part in ("target", "draft-copy", "draft-other"):
        assert (made / part / "tokenizer.json").is_file()
    assert not list(made.glob(".*")), "temporary directories were left behind"


def test_same_bytes_on_every_run(made, tmp_path):
    make_demo_model(tmp_path)
    assert digest(tmp_path) == digest(made)


def test_second_run_writes_nothing(made):
    before = {p: p.stat().st_mtime_ns for p in made.rglob("*")}
    assert make_demo_model(made) == {part: False for part in PARTS}
    assert {p: p.stat().st_mtime_ns for p in made.rglob("*")} == before


def test_incomplete_part_is_replaced_whole(made, tmp_path):
    make_demo_model(tmp_path)
    (tmp_path / "draft-other" / COMPLETE_MARKER).unlink()
    (tmp_path / "draft-other" / "stray").write_text("left by an interrupted run")
    assert make_demo_model(tmp_path)["draft-other"] is True
    assert digest(tmp_path) == digest(made)


def test_draft_copy_has_the_target_weights(made):
    target, copy = digest(made / "target"), digest(made / "draft-copy")
    assert copy == target


def test_configs_match_the_cpu_backend(made):
    config = json.loads((made / "target" / "config.json").read_text())
    assert config["hidden_size"] // config["num_attention_heads"] == HEAD_DIM == 64  # the CPU kernel refuses 16
    assert config["vocab_size"] == VOCAB and config["num_key_value_heads"] == 1
    other = json.loads((made / "draft-other" / "config.json").read_text())
    assert other["vocab_size"] == VOCAB and other["num_hidden_layers"] == 1
    eagle = json.loads((made / "draft-eagle3" / "config.json").read_text())
    assert eagle["architectures"] == ["LlamaForCausalLMEagle3"] and eagle["draft_vocab_size"] == VOCAB
    # A 2-layer target has hidden states 0, 1, 2 only: the default auxiliary layers would not exist.
    assert eagle["eagle_config"]["eagle_aux_hidden_state_layer_ids"] == [0, 1, 2]


def test_eagle3_tensors_have_the_eagle3_layout(made):
    from safetensors import safe_open

    with safe_open(str(made / "draft-eagle3" / "model.safetensors"), "pt") as handle:
        shapes = {name: tuple(handle.get_slice(name).get_shape()) for name in handle.keys()}
    assert shapes == eagle3_tensor_shapes()
    assert shapes["fc.weight"] == (128, 384) and shapes["midlayer.self_attn.q_proj.weight"] == (128, 256)


def test_tokenizer_and_chat_template(made):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(made / "target"))
    assert len(tok) <= VOCAB
    text = "The quick brown fox"
    assert tok.decode(tok(text, add_special_tokens=False).input_ids) == text
    prompt = tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True)
    assert prompt == f"{SPECIAL_TOKENS[0]}<|user|>hi\n<|assistant|>"


@pytest.mark.parametrize("seed", [1, 1234, 98765])
def test_successor_map_cycles_over_ordinary_tokens(seed):
    successor = successor_map(seed)
    ordinary = range(len(SPECIAL_TOKENS), VOCAB)
    assert sorted(successor[t] for t in ordinary) == list(ordinary)  # a permutation of the ordinary tokens
    for token in ordinary:  # every cycle is short, so greedy text repeats soon
        seen, current = 0, successor[token]
        while current != token:
            current, seen = successor[current], seen + 1
        assert seen < 7
    assert all(successor[s] >= len(SPECIAL_TOKENS) for s in range(len(SPECIAL_TOKENS)))


def test_cli_writes_and_reports(tmp_path):
    run = lambda: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "nim_specdec", "demo-model", str(tmp_path / "m"), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    first, second = run(), run()
    assert first.returncode == 0, first.stderr
    assert strict_json.loads(first.stdout)["written"] == {part: True for part in PARTS}
    assert strict_json.loads(second.stdout)["written"] == {part: False for part in PARTS}


def test_cli_refuses_a_file(tmp_path):
    path = tmp_path / "file"
    path.write_text("x")
    done = subprocess.run(
        [sys.executable, "-m", "nim_specdec", "demo-model", str(path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and "is not a directory" in done.stderr and "Traceback" not in done.stderr


def test_the_learnable_successor_map_is_one_cycle_through_every_ordinary_token():
    from nim_specdec_lab.demo_model import LEARNABLE, single_cycle_successor_map

    successor = single_cycle_successor_map(LEARNABLE.seed)
    token, seen = len(SPECIAL_TOKENS), []
    while token not in seen:
        seen.append(token)
        token = successor[token]
    assert sorted(seen) == list(range(len(SPECIAL_TOKENS), VOCAB))
    assert all(successor[s] >= len(SPECIAL_TOKENS) for s in range(len(SPECIAL_TOKENS)))


def test_the_learnable_target_is_written_once_and_leaves_the_demo_alone(made, tmp_path):
    import torch
    from safetensors.torch import load_file

    from nim_specdec_lab.demo_model import (
        LEARNABLE,
        LEARNABLE_PART,
        LEARNABLE_RECIPE_VERSION,
        make_learnable_model,
        single_cycle_successor_map,
    )

    before = digest(made)
    assert make_learnable_model(made) == {LEARNABLE_PART: True}
    assert make_learnable_model(made) == {LEARNABLE_PART: False}
    assert {k: v for k, v in digest(made).items() if not k.startswith(LEARNABLE_PART + "/")} == before
    part = made / LEARNABLE_PART
    assert part_complete(part, LEARNABLE_RECIPE_VERSION)
    config = strict_json.loads((part / "config.json").read_text())
    assert config["num_hidden_layers"] == LEARNABLE.layers == 4 and config["head_dim"] == HEAD_DIM
    make_learnable_model(tmp_path)
    assert digest(tmp_path) == {k: v for k, v in digest(made).items() if k.startswith(LEARNABLE_PART + "/")}
    # Each token's own embedding scores its successor's row highest: the transition the draft is to learn.
    tensors = load_file(str(part / "model.safetensors"))
    embed, head = tensors["model.embed_tokens.weight"].float(), tensors["lm_head.weight"].float()
    successor = single_cycle_successor_map(LEARNABLE.seed)
    predicted = (embed[len(SPECIAL_TOKENS) :] @ head.T).argmax(dim=1)
    assert torch.equal(predicted, torch.tensor(successor[len(SPECIAL_TOKENS) :]))
