"""A tiny demo model made offline: a Llama target, its tokenizer, and three drafts.

Layout written under DIR (each part written to a temporary sibling, then renamed into place):

    DIR/target        2-layer Llama, hidden 128, 2 heads, 1 KV head (head_dim 64), bf16, chat template
    DIR/draft-copy    the target's files copied: under greedy decoding every drafted token is accepted
    DIR/draft-other   1-layer Llama with other weights and the same vocabulary: drafts are mostly rejected
    DIR/draft-eagle3  1-layer EAGLE3 head whose shapes match the target

Weights are random from fixed seeds, so the same DIR content comes out on every run. head_dim 64 because
the CPU attention kernel of vLLM refuses small head sizes. Nothing is downloaded.

`make_learnable_model(DIR)` writes one more part, DIR/learnable: a target whose sampled outputs a small
draft can learn and prompt lookup cannot predict (see LEARNABLE).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from nim_specdec.files.regular_file import read_inside

RECIPE_VERSION = 2
COMPLETE_MARKER = ".demo-model-complete"
PARTS = ("target", "draft-copy", "draft-other", "draft-eagle3")

HIDDEN = 128
HEADS = 2
KV_HEADS = 1
HEAD_DIM = 64
INTERMEDIATE = 256
VOCAB = 330
MAX_POSITIONS = 2048
SPECIAL_TOKENS = ("<|begin_of_text|>", "<|end_of_text|>", "<|user|>", "<|assistant|>", "<|system|>")
BOS, EOS = SPECIAL_TOKENS[0], SPECIAL_TOKENS[1]

# A plain role-tagged template; the generation prompt opens the assistant turn.
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{{ '<|' + message['role'] + '|>' + message['content'] + '\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}"
)

# Training text for the tokenizer: fixed, so that the merges (and token ids) are the same on every run.
_CORPUS = [
    "Speculative decoding lets a small draft propose several tokens that the target model verifies at once.",
    "The quick brown fox jumps over the lazy dog. The lazy dog sleeps in the sun.",
    "def add(a, b):\n    return a + b\n\nprint(add(2, 3))",
    "One, two, three, four, five, six, seven, eight, nine, ten.",
    "Hello! How are you today? I am fine, thank you. What is the weather like?",
    "A tiny model with random weights repeats itself, which prompt lookup can predict.",
    "Acceptance rate is accepted tokens over draft tokens; acceptance length is one plus accepted over drafts.",
]


@dataclass(frozen=True)
class LlamaShape:
    layers: int
    seed: int


TARGET = LlamaShape(layers=2, seed=1234)
OTHER = LlamaShape(layers=1, seed=98765)
EAGLE3_SEED = 4242
EAGLE3_AUX_LAYERS = (0, 1, 2)


def llama_config(layers: int) -> dict:
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": HIDDEN,
        "intermediate_size": INTERMEDIATE,
        "num_hidden_layers": layers,
        "num_attention_heads": HEADS,
        "num_key_value_heads": KV_HEADS,
        "head_dim": HEAD_DIM,
        "hidden_act": "silu",
        "max_position_embeddings": MAX_POSITIONS,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "vocab_size": VOCAB,
        "bos_token_id": 0,
        "eos_token_id": 1,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    }


def eagle3_config() -> dict:
    config = llama_config(1)
    config.update(
        {
            "architectures": ["LlamaForCausalLMEagle3"],
            "draft_vocab_size": VOCAB,
            "target_hidden_size": HIDDEN,
            # vLLM's default auxiliary layers (2, L // 2, L - 3) assume a deep target; a 2-layer target has
            # the states 0 (embeddings), 1 and 2 (after each layer): three, as fc expects.
            "eagle_config": {"eagle_aux_hidden_state_layer_ids": list(EAGLE3_AUX_LAYERS), "use_aux_hidden_state": True},
        }
    )
    return config


def _layer_shapes(prefix: str, qkv_in: int) -> dict[str, tuple[int, ...]]:
    return {
        f"{prefix}.self_attn.q_proj.weight": (HEADS * HEAD_DIM, qkv_in),
        f"{prefix}.self_attn.k_proj.weight": (KV_HEADS * HEAD_DIM, qkv_in),
        f"{prefix}.self_attn.v_proj.weight": (KV_HEADS * HEAD_DIM, qkv_in),
        f"{prefix}.self_attn.o_proj.weight": (HIDDEN, HEADS * HEAD_DIM),
        f"{prefix}.mlp.gate_proj.weight": (INTERMEDIATE, HIDDEN),
        f"{prefix}.mlp.up_proj.weight": (INTERMEDIATE, HIDDEN),
        f"{prefix}.mlp.down_proj.weight": (HIDDEN, INTERMEDIATE),
        f"{prefix}.input_layernorm.weight": (HIDDEN,),
        f"{prefix}.post_attention_layernorm.weight": (HIDDEN,),
    }


def llama_tensor_shapes(layers: int) -> dict[str, tuple[int, ...]]:
    shapes: dict[str, tuple[int, ...]] = {"model.embed_tokens.weight": (VOCAB, HIDDEN)}
    for i in range(layers):
        shapes.update(_layer_shapes(f"model.layers.{i}", HIDDEN))
    shapes["model.norm.weight"] = (HIDDEN,)
    shapes["lm_head.weight"] = (VOCAB, HIDDEN)
    return shapes


def eagle3_tensor_shapes() -> dict[str, tuple[int, ...]]:
    # The usual EAGLE3 checkpoint layout: one "midlayer" whose attention reads [embeddings, hidden] (2H),
    # "fc" folding three auxiliary hidden states of the target (3H) into H; embeddings come from the target.
    shapes = _layer_shapes("midlayer", 2 * HIDDEN)
    shapes["midlayer.hidden_norm.weight"] = (HIDDEN,)
    shapes["fc.weight"] = (HIDDEN, 3 * HIDDEN)
    shapes["norm.weight"] = (HIDDEN,)
    shapes["lm_head.weight"] = (VOCAB, HIDDEN)
    return shapes


# Standard deviations relative to 1/sqrt(fan_in); the blocks' output projections are small so that the
# residual stream stays close to the current token's embedding (see _successor_head).
_SCALE = {"o_proj": 0.3, "down_proj": 0.3}
CYCLE_LENGTHS = (3, 4, 5, 6, 7)


def _scale(name: str, fan_in: int) -> float:
    if "embed_tokens" in name:
        return 1.0
    for key, factor in _SCALE.items():
        if key in name:
            return factor / fan_in**0.5
    return 1.0 / fan_in**0.5


def successor_map(seed: int) -> list[int]:
    """next token of each token: short cycles over the ordinary tokens; special tokens lead into them."""
    import torch  # noqa: PLC0415 - vLLM's dependencies: ~1 s, only when the model is written

    generator = torch.Generator().manual_seed(seed)
    ordinary = [len(SPECIAL_TOKENS) + int(i) for i in torch.randperm(VOCAB - len(SPECIAL_TOKENS), generator=generator)]
    successor = [0] * VOCAB
    start = 0
    while start < len(ordinary):
        length = CYCLE_LENGTHS[int(torch.randint(len(CYCLE_LENGTHS), (1,), generator=generator))]
        cycle = ordinary[start : start + length]
        for i, token in enumerate(cycle):
            successor[token] = cycle[(i + 1) % len(cycle)]
        start += length
    for special in range(len(SPECIAL_TOKENS)):
        successor[special] = ordinary[special]
    return successor


def _successor_head(embed, successor: list[int]):
    """lm_head whose row j is the sum of the embeddings of the tokens that j follows.

    The logit of successor(t) then holds |e_t|^2 (about 128 after the final norm) against random dot
    products of about 11: greedy decoding follows short cycles (prompt lookup gets accepted, a copy of the
    target agrees with it) and the top logit wins by a margin far wider than bf16 rounding, so argmax never
    flips between batch shapes (speculation on and off give the same tokens). Special tokens have zero
    rows: they are never predicted, so completions are not cut short by a random end of text.
    """
    import torch  # noqa: PLC0415 - vLLM's dependencies: ~1 s, only when the model is written

    head = torch.zeros_like(embed)
    for token, following in enumerate(successor):
        head[following] += embed[token]
    return head / HIDDEN**0.5


def _random_tensors(shapes: dict[str, tuple[int, ...]], seed: int) -> dict:
    import torch  # noqa: PLC0415 - vLLM's dependencies: ~1 s, only when the model is written

    generator = torch.Generator().manual_seed(seed)
    tensors = {}
    for name in sorted(shapes):  # sorted: the draw order, and so the weights, never depend on dict order
        shape = shapes[name]
        if len(shape) == 1:
            tensors[name] = torch.ones(shape)
        else:
            tensors[name] = torch.randn(shape, generator=generator) * _scale(name, shape[1])
    if "model.embed_tokens.weight" in tensors:
        tensors["lm_head.weight"] = _successor_head(tensors["model.embed_tokens.weight"], successor_map(seed))
    return {name: tensor.to(torch.bfloat16).contiguous() for name, tensor in tensors.items()}


def _write_weights(out: Path, tensors: dict) -> None:
    from safetensors.torch import save_file  # noqa: PLC0415 - vLLM's dependencies: ~1 s, only when the model is written

    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})


def _write_json(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def _write_tokenizer(out: Path) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: PLC0415 - vLLM's dependencies: ~0.7 s, only when the model is written
    from transformers import PreTrainedTokenizerFast  # noqa: PLC0415 - vLLM's dependencies: ~0.7 s, only when the model is written

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_CORPUS, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=BOS, eos_token=EOS, pad_token=EOS, model_max_length=MAX_POSITIONS
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(str(out))


def _write_target(out: Path) -> None:
    _write_json(out / "config.json", llama_config(TARGET.layers))
    _write_json(out / "generation_config.json", {"bos_token_id": 0, "eos_token_id": 1, "do_sample": False})
    _write_weights(out, _random_tensors(llama_tensor_shapes(TARGET.layers), TARGET.seed))
    _write_tokenizer(out)


def _write_other(out: Path) -> None:
    _write_json(out / "config.json", llama_config(OTHER.layers))
    _write_weights(out, _random_tensors(llama_tensor_shapes(OTHER.layers), OTHER.seed))
    _write_tokenizer(out)


def _write_eagle3(out: Path) -> None:
    _write_json(out / "config.json", eagle3_config())
    _write_weights(out, _random_tensors(eagle3_tensor_shapes(), EAGLE3_SEED))


def part_complete(path: Path, version: int = RECIPE_VERSION) -> bool:
    marker = path / COMPLETE_MARKER
    try:  # a regular file inside the part, a few bytes: a link or a FIFO planted in its place is no marker
        return read_inside(marker, path, 64).strip() == str(version).encode()
    except OSError:
        return False


def _write_part(root: Path, name: str, writer: Callable[[Path], None], version: int = RECIPE_VERSION) -> bool:
    """Write one part atomically; returns False when it was already complete."""
    final = root / name
    if part_complete(final, version):
        return False
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=root))
    try:
        writer(tmp)
        (tmp / COMPLETE_MARKER).write_text(f"{version}\n")
        # mkdtemp and safetensors create owner-only modes; a model dir is read by whoever runs the server.
        os.chmod(tmp, 0o755)
        for item in tmp.iterdir():
            os.chmod(item, 0o644)
        if final.exists() or final.is_symlink():
            # An incomplete or older part: replaced whole, never patched.
            shutil.rmtree(final) if final.is_dir() and not final.is_symlink() else final.unlink()
        os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return True


# The learnable target: 4 layers, so that an EAGLE3 head has three distinct auxiliary states to read, and one
# long successor cycle through every ordinary token instead of short ones. At temperature 1 each token is followed
# by its successor with high probability (measured with transformers: 0.95 to 0.99), otherwise by a random token,
# and the walk goes on from there: a completion shorter than the cycle rarely repeats a token, so prompt lookup
# finds little to copy (about 1% of sampled tokens), while the transition itself is one mapping a draft head
# learns from a few thousand tokens.
LEARNABLE = LlamaShape(layers=4, seed=2718)
LEARNABLE_PART = "learnable"
LEARNABLE_RECIPE_VERSION = 1
# vLLM's numbering: 0 is the embeddings' output, k the output of layer k (so 1..4 exist in a 4-layer target).
LEARNABLE_AUX_LAYERS = (1, 2, 4)


def single_cycle_successor_map(seed: int) -> list[int]:
    """next token of each token: one cycle through every ordinary token; special tokens lead into it."""
    import torch  # noqa: PLC0415 - vLLM's dependencies: ~1 s, only when the model is written

    generator = torch.Generator().manual_seed(seed)
    ordinary = [len(SPECIAL_TOKENS) + int(i) for i in torch.randperm(VOCAB - len(SPECIAL_TOKENS), generator=generator)]
    successor = [0] * VOCAB
    for i, token in enumerate(ordinary):
        successor[token] = ordinary[(i + 1) % len(ordinary)]
    for special in range(len(SPECIAL_TOKENS)):
        successor[special] = ordinary[special]
    return successor


def _learnable_tensors() -> dict:
    import torch  # noqa: PLC0415 - vLLM's dependencies: ~1 s, only when the model is written

    tensors = _random_tensors(llama_tensor_shapes(LEARNABLE.layers), LEARNABLE.seed)
    embed = tensors["model.embed_tokens.weight"].float()
    head = _successor_head(embed, single_cycle_successor_map(LEARNABLE.seed))
    tensors["lm_head.weight"] = head.to(torch.bfloat16).contiguous()
    return tensors


def _write_learnable(out: Path) -> None:
    _write_json(out / "config.json", llama_config(LEARNABLE.layers))
    _write_json(out / "generation_config.json", {"bos_token_id": 0, "eos_token_id": 1, "do_sample": True})
    _write_weights(out, _learnable_tensors())
    _write_tokenizer(out)


def make_learnable_model(root: str | os.PathLike) -> dict[str, bool]:
    """Write the learnable target under root/learnable; returns {part: written}."""
    root_path = Path(root)
    root_path.mkdir(parents=True, exist_ok=True)
    return {LEARNABLE_PART: _write_part(root_path, LEARNABLE_PART, _write_learnable, LEARNABLE_RECIPE_VERSION)}


def make_demo_model(root: str | os.PathLike) -> dict[str, bool]:
    """Write the demo model under root; returns {part: written} (False where it was already there)."""
    root_path = Path(root)
    root_path.mkdir(parents=True, exist_ok=True)
    written = {"target": _write_part(root_path, "target", _write_target)}

    def copy_target(out: Path) -> None:
        for item in sorted((root_path / "target").iterdir()):
            if item.is_file() and item.name != COMPLETE_MARKER:
                shutil.copy2(item, out / item.name)

    written["draft-copy"] = _write_part(root_path, "draft-copy", copy_target)
    written["draft-other"] = _write_part(root_path, "draft-other", _write_other)
    written["draft-eagle3"] = _write_part(root_path, "draft-eagle3", _write_eagle3)
    return written
